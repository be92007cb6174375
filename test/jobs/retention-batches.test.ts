/**
 * The retention sweep's batches are sized by time (service/upkeep/batch-size.ts): a batch that holds the
 * store longer than its target makes the next one smaller, a quick one makes it larger, by at most
 * half or double at a time and within the bounds.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchSize } from '../../src/service/upkeep/batch-size.js';

/** A batch that takes `msPerRow` per row on a clock the test moves. */
function fakeClock() {
  let now = 0;
  return {
    clock: () => now,
    batch: (msPerRow: number) => (size: number) => {
      now += size * msPerRow;
      return Promise.resolve(size);
    },
  };
}

describe('batch sizes of the retention sweep', () => {
  it('shrink when a batch holds the store too long, and grow back when batches are quick', async () => {
    const { clock, batch } = fakeClock();
    const sizes = new BatchSize({ first: 200, min: 10, max: 1000, targetMs: 4 }, clock);
    // 200 rows at 0.1 ms: 20 ms, five times the target; halved, not cut to 40 at once.
    assert.equal(await sizes.run(batch(0.1)), 200);
    assert.equal(sizes.size, 100);
    for (let i = 0; i < 10; i++) await sizes.run(batch(0.1));
    assert.equal(sizes.size, 40, 'settles where a batch takes the target');
    for (let i = 0; i < 10; i++) await sizes.run(batch(0.001));
    assert.equal(sizes.size, 1000, 'quick batches grow to the bound');
  });

  it('tells how long the last batch took, which the sweep rests after it', async () => {
    const { clock, batch } = fakeClock();
    const sizes = new BatchSize({ first: 50, min: 10, max: 1000, targetMs: 4 }, clock);
    assert.equal(sizes.lastMs, 0);
    await sizes.run(batch(0.1)); // 50 rows: 5 ms
    assert.ok(Math.abs(sizes.lastMs - 5) < 1e-9, String(sizes.lastMs));
    await sizes.run(batch(0.1)); // 40 rows, sized for 4 ms
    assert.ok(Math.abs(sizes.lastMs - 4) < 1e-9, String(sizes.lastMs));
  });

  it('stays within its bounds however slow or quick', async () => {
    const { clock, batch } = fakeClock();
    const sizes = new BatchSize({ first: 50, min: 10, max: 1000, targetMs: 4 }, clock);
    for (let i = 0; i < 10; i++) await sizes.run(batch(100));
    assert.equal(sizes.size, 10);
    for (let i = 0; i < 20; i++) await sizes.run(batch(0));
    assert.equal(sizes.size, 1000);
  });
});
