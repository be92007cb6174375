/** The recent past repeated: what a forecast takes to arrive after now. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RecentArrivals } from '../../src/scheduler/recent-arrivals.js';

describe('RecentArrivals', () => {
  it('repeats the last window after now, window after window, up to the horizon', () => {
    const r = new RecentArrivals<string>(10_000);
    r.add(0, 'old'); // out of the window by now
    r.add(95_000, 'a');
    r.add(98_000, 'b');
    assert.deepEqual(r.project(100_000, 25_000, 100), [
      { at: 105_000, item: 'a' },
      { at: 108_000, item: 'b' },
      { at: 115_000, item: 'a' },
      { at: 118_000, item: 'b' },
      { at: 125_000, item: 'a' },
    ]);
  });

  it('stops at max, and projects only what keep selects', () => {
    const r = new RecentArrivals<number>(10_000);
    for (let i = 0; i < 10; i++) r.add(90_000 + i * 1000, i);
    assert.equal(r.project(100_000, 3_600_000, 7).length, 7);
    const high = r.project(100_000, 20_000, 100, (i) => i >= 8);
    assert.deepEqual(
      high.map((a) => a.item),
      [8, 9, 8, 9],
    );
  });

  it('keeps at most max arrivals: the window is then the span they cover', () => {
    const r = new RecentArrivals<number>(60_000, 3);
    for (let i = 0; i < 10; i++) r.add(1000 * i, i);
    // Kept: 7, 8, 9 (at 7 s to 9 s); at 10 s they span 3 s, repeated every 3 s.
    assert.deepEqual(
      r.project(10_000, 6_000, 100),
      [
        { at: 10_000 + 0, item: 7 },
        { at: 11_000, item: 8 },
        { at: 12_000, item: 9 },
        { at: 13_000, item: 7 },
        { at: 14_000, item: 8 },
        { at: 15_000, item: 9 },
        { at: 16_000, item: 7 },
      ].filter((a) => a.at > 10_000),
    );
  });

  it('until a window has passed since the first arrival, the window is only that long', () => {
    const r = new RecentArrivals<string>(60_000);
    r.add(1_000, 'a');
    r.add(3_000, 'b');
    // 4 s since the first: a and b come again every 4 s.
    assert.deepEqual(
      r.project(5_000, 8_000, 100).map((a) => a.at),
      [7_000, 9_000, 11_000, 13_000],
    );
  });

  it('projects nothing with no recent arrival', () => {
    const r = new RecentArrivals<number>(1000);
    r.add(0, 1);
    assert.deepEqual(r.project(5000, 60_000, 10), []);
  });
});
