/** The uids a local factory gives its jobs (pure): ranges as berth.yaml writes them, the pool's rules. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { defaultUidRange, overlap, parseUidRange, rangeSize } from '../../src/domain/uid-range.js';
import { UidPool } from '../../src/factories/uid-pool.js';

describe('parseUidRange', () => {
  const cases: [string, { first: number; last: number } | RegExp][] = [
    ['200000-200999', { first: 200_000, last: 200_999 }],
    [' 5000 - 5000 ', { first: 5000, last: 5000 }],
    ['200000', /is not a range of uids/],
    ['a-b', /is not a range of uids/],
    ['-5-10', /is not a range of uids/],
    ['0-999', /starts at 0: a job's uid must be 1000 or more/],
    ['999-2000', /starts at 999/],
    ['2000-1000', /ends \(1000\) before it starts \(2000\)/],
    ['2147483640-2147483648', /ends at 2147483648: the greatest uid is 2147483647/],
  ];
  for (const [text, want] of cases)
    it(JSON.stringify(text), () => {
      if (want instanceof RegExp) assert.throws(() => parseUidRange(text), want);
      else assert.deepEqual(parseUidRange(text), want);
    });
});

describe('defaultUidRange', () => {
  it('is 10,000 uids above 100,000,000 and within an int32 (what spawn takes), the same for the same seed', () => {
    fc.assert(
      fc.property(fc.string(), (seed) => {
        const r = defaultUidRange(seed);
        assert.equal(rangeSize(r), 10_000);
        assert.ok(r.first >= 100_000_000 && r.last <= 0x7fffffff, JSON.stringify(r));
        assert.deepEqual(defaultUidRange(seed), r);
      }),
    );
  });

  it('gives the data directories of many servers ranges apart', () => {
    const ranges = Array.from({ length: 50 }, (_, i) => defaultUidRange(`/tmp/berth-test-${i}\0local`));
    for (const [i, a] of ranges.entries())
      for (const b of ranges.slice(i + 1)) assert.equal(overlap(a, b), false, `${a.first} and ${b.first}`);
  });
});

describe('UidPool', () => {
  const range = { first: 5000, last: 5003 };

  it('hands each uid to one job at a time, fresh ones first, then the one given back longest ago', () => {
    const pool = new UidPool(range);
    assert.deepEqual([pool.take(), pool.take(), pool.take()], [5000, 5001, 5002]);
    pool.give(5001);
    pool.give(5000);
    assert.equal(pool.take(), 5003, 'a uid never used before goes first');
    assert.deepEqual([pool.take(), pool.take()], [5001, 5000], 'then the one given back first');
    assert.equal(pool.take(), undefined, 'all four are in use');
  });

  it('keeps a quarantined uid from every job until it is given back', () => {
    const pool = new UidPool({ first: 5000, last: 5000 });
    const uid = pool.take()!;
    pool.quarantine(uid);
    assert.deepEqual(pool.quarantined(), [uid]);
    assert.equal(pool.take(), undefined);
    pool.give(uid);
    assert.deepEqual(pool.quarantined(), []);
    assert.equal(pool.take(), uid);
  });

  it('never hands out a uid in use, whatever the order of takes, gives, quarantines and take-overs (property)', () => {
    type Op = { kind: 'take' } | { kind: 'give' | 'quarantine' | 'reserve'; pick: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.constant({ kind: 'take' as const }),
      fc.record({
        kind: fc.constantFrom('give' as const, 'quarantine' as const, 'reserve' as const),
        pick: fc.nat(),
      }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const pool = new UidPool(range);
        const inUse = new Set<number>();
        const held = new Set<number>();
        for (const o of ops) {
          if (o.kind === 'take') {
            const uid = pool.take();
            const free = rangeSize(range) - inUse.size - held.size;
            if (uid === undefined) assert.equal(free, 0, 'refused while a uid was free');
            else {
              assert.ok(uid >= range.first && uid <= range.last);
              assert.ok(!inUse.has(uid) && !held.has(uid), `uid ${uid} handed out twice`);
              inUse.add(uid);
            }
          } else if (o.kind === 'reserve') {
            // A uid a running worker holds, taken over at a restart: any of the range, or one beyond.
            const uid = range.first + (o.pick % (rangeSize(range) + 1));
            const ok = pool.reserve(uid);
            assert.equal(ok, uid <= range.last && !inUse.has(uid), `reserve(${uid})`);
            if (ok) {
              inUse.add(uid);
              held.delete(uid);
            }
          } else {
            const all = [...inUse, ...(o.kind === 'give' ? held : [])];
            if (all.length === 0) continue;
            const uid = all[o.pick % all.length]!;
            if (o.kind === 'give') {
              pool.give(uid);
              inUse.delete(uid);
              held.delete(uid);
            } else {
              pool.quarantine(uid);
              inUse.delete(uid);
              held.add(uid);
            }
          }
          assert.equal(pool.available, rangeSize(range) - inUse.size - held.size);
        }
      }),
    );
  });
});
