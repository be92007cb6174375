/** Durations as people write and read them (pure): parseDuration and formatSpan. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { formatSpan, parseDuration } from '../../src/domain/duration.js';

describe('parseDuration', () => {
  const cases: [string, number | undefined][] = [
    ['90', 90],
    ['90s', 90],
    ['10m', 600],
    ['1h30m', 5400],
    ['2d', 172_800],
    ['1d12h', 129_600],
    [' 5m ', 300],
    ['0s', 0],
    ['', undefined],
    ['soon', undefined],
    ['1.5h', undefined],
    ['30m1h', undefined],
    ['-5', undefined],
  ];
  for (const [text, seconds] of cases) {
    it(`${JSON.stringify(text)} → ${seconds}`, () => assert.equal(parseDuration(text), seconds));
  }
});

describe('formatSpan', () => {
  const cases: [number, 1 | 2, string][] = [
    [42_000, 1, '42s'],
    [303_000, 1, '5m'],
    [303_000, 2, '5m3s'],
    [3_600_000, 2, '1h'],
    [14_400_000, 2, '4h'],
    [7_500_000, 2, '2h5m'],
    [86_400_000 + 60_000, 2, '1d'],
    [999, 2, '0s'],
    [-5_000, 1, '0s'],
  ];
  for (const [ms, parts, text] of cases) {
    it(`${ms} ms in ${parts} part(s) → ${text}`, () => assert.equal(formatSpan(ms, parts), text));
  }

  it('reads back as what it shows: the span, less what its last unit leaves out', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 * 86_400 }), (s) => {
        const back = parseDuration(formatSpan(s * 1000, 2));
        assert.ok(back !== undefined && back <= s, `${s} → ${formatSpan(s * 1000, 2)} → ${back}`);
        // Two parts drop at most what is below the second unit (an hour below days, …).
        const first = s >= 86_400 ? 86_400 : s >= 3_600 ? 3_600 : s >= 60 ? 60 : 1;
        const below = first === 86_400 ? 3_600 : first === 3_600 ? 60 : 1;
        assert.ok(s - back < below, `${s} → ${back}`);
      }),
    );
  });
});
