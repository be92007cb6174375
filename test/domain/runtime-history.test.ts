/** Expected runtimes for start-time estimates: which basis wins, the median, the bounds. */
import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import fc from 'fast-check';
import {
  ASSUMED_RUNTIME_MS,
  describeBases,
  expectedEnd,
  RuntimeHistory,
  type RuntimeSubject,
} from '../../src/domain/runtime-history.js';

const job = (over: Partial<RuntimeSubject> = {}): RuntimeSubject => ({
  project: 'p',
  name: 'train',
  target: 'local',
  queue: 'q',
  timeoutSeconds: null,
  ...over,
});

describe('RuntimeHistory.expected', () => {
  it('similar jobs first, as the median of their recent runtimes', () => {
    const h = new RuntimeHistory();
    for (const ms of [1000, 9000, 2000]) h.record(job(), ms);
    assert.deepEqual(h.expected(job()), { ms: 2000, basis: 'similar' });
    h.record(job(), 4000);
    assert.deepEqual(h.expected(job()), { ms: 3000, basis: 'similar' });
  });

  it('capped by the job’s own timeout', () => {
    const h = new RuntimeHistory();
    h.record(job(), 120_000);
    assert.deepEqual(h.expected(job({ timeoutSeconds: 30 })), { ms: 30_000, basis: 'similar' });
  });

  it('then its timeout, then its queue’s runtimes, then an assumption', () => {
    const h = new RuntimeHistory();
    assert.deepEqual(h.expected(job()), { ms: ASSUMED_RUNTIME_MS, basis: 'assumed' });
    h.record(job({ name: 'other' }), 5000);
    assert.deepEqual(h.expected(job()), { ms: 5000, basis: 'queue' });
    assert.deepEqual(h.expected(job({ timeoutSeconds: 60 })), { ms: 60_000, basis: 'timeout' });
    // Another project's job of the same name is not similar.
    assert.equal(h.expected(job({ project: 'x', queue: 'elsewhere' })).basis, 'assumed');
  });

  it('keeps a bounded number of kinds, forgetting the least recently seen', () => {
    const h = new RuntimeHistory(3);
    for (const name of ['a', 'b', 'c']) h.record(job({ name }), 1000);
    h.record(job({ name: 'a' }), 1000); // seen again: now the most recent
    h.record(job({ name: 'd' }), 1000);
    assert.equal(h.size, 3);
    assert.equal(h.expected(job({ name: 'b' })).basis, 'queue');
    assert.equal(h.expected(job({ name: 'a' })).basis, 'similar');
  });
});

test('the median is of the last 20 runtimes only', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 1e6 }), { minLength: 1, maxLength: 60 }), (runtimes) => {
      const h = new RuntimeHistory();
      for (const ms of runtimes) h.record(job(), ms);
      const last = runtimes.slice(-20).sort((a, b) => a - b);
      const mid = last.length >> 1;
      const median = last.length % 2 ? last[mid]! : (last[mid - 1]! + last[mid]!) / 2;
      assert.equal(h.expected(job()).ms, median);
    }),
  );
});

describe('expectedEnd', () => {
  const now = 100_000;
  it('start plus the expected runtime while that is ahead', () => {
    assert.equal(expectedEnd(90_000, { ms: 20_000, basis: 'similar' }, null, now), 110_000);
  });
  it('outlived: its timeout if that is ahead, else a quarter of its age again (at least a minute)', () => {
    assert.equal(expectedEnd(90_000, { ms: 1_000, basis: 'similar' }, 60, now), 150_000);
    assert.equal(expectedEnd(0, { ms: 1_000, basis: 'similar' }, null, now), now + 60_000);
    assert.equal(expectedEnd(-900_000, { ms: 1_000, basis: 'similar' }, null, now), now + 250_000);
  });
});

test('describeBases says how many runtimes rest on what', () => {
  assert.equal(
    describeBases({ similar: 2, timeout: 1, queue: 0, assumed: 1 }),
    "expected runtimes of 4 jobs: 2 from similar jobs' runtimes, 1 from timeouts, 1 assumed to run 1h",
  );
  assert.equal(
    describeBases({ similar: 0, timeout: 0, queue: 0, assumed: 0 }),
    'no job ahead holds or needs quota',
  );
});
