/**
 * The pure parts of gang jobs: a factory's pool hands out a gang's workers all at once or not at
 * all, in line order; a gang's run ends when every rank has reported, with its first failure.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FinishRequest } from '../../src/agent/protocol.js';
import { Gang } from '../../src/controller/gang.js';
import { Pool } from '../../src/controller/pool.js';
import type { Waiter } from '../../src/controller/waitlist.js';

const waiter = (id: number, workers = 1, priority = 0): Waiter => ({ id, priority, createdAt: id, workers });
const ok: FinishRequest = { outcome: 'exited', exitCode: 0, signal: null };
const exit = (code: number): FinishRequest => ({ outcome: 'exited', exitCode: code, signal: null });

describe("a factory's pool", () => {
  const cases: {
    name: string;
    capacity: number;
    inUse: number;
    line: Waiter[];
    taken: number[];
    inUseAfter: number;
  }[] = [
    {
      name: 'a gang that fits takes all its workers',
      capacity: 4,
      inUse: 0,
      line: [waiter(1, 4)],
      taken: [1],
      inUseAfter: 4,
    },
    {
      name: 'a gang that does not fit takes none',
      capacity: 4,
      inUse: 1,
      line: [waiter(1, 4)],
      taken: [],
      inUseAfter: 1,
    },
    {
      name: 'nobody overtakes a gang at the head that does not fit',
      capacity: 4,
      inUse: 1,
      line: [waiter(1, 4), waiter(2, 1)],
      taken: [],
      inUseAfter: 1,
    },
    {
      name: 'jobs ahead of a gang go first, then it waits',
      capacity: 4,
      inUse: 0,
      line: [waiter(1), waiter(2, 2), waiter(3, 2)],
      taken: [1, 2],
      inUseAfter: 3,
    },
    {
      name: 'a higher-priority gang is served before older small jobs',
      capacity: 3,
      inUse: 0,
      line: [waiter(1), waiter(2, 3, 5)],
      taken: [2],
      inUseAfter: 3,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const pool = new Pool<Waiter>('factory', 'f', c.capacity);
      pool.inUse = c.inUse;
      for (const w of c.line) pool.waitlist.add(w);
      const taken: number[] = [];
      for (let w = pool.take(); w; w = pool.take()) taken.push(w.id);
      assert.deepEqual(taken, c.taken);
      assert.equal(pool.inUse, c.inUseAfter);
    });
  }

  it("counts one unit per waiter in a resource's pool, whatever its workers", () => {
    const pool = new Pool<Waiter>('resource', 'licence', 1);
    pool.waitlist.add(waiter(1, 3));
    assert.equal(pool.take()?.id, 1);
    assert.equal(pool.inUse, 1);
  });

  it('frees all the units of a gang at once', () => {
    const pool = new Pool<Waiter>('factory', 'f', 4);
    pool.waitlist.add(waiter(1, 3));
    pool.take();
    pool.free(3);
    assert.equal(pool.inUse, 0);
  });
});

describe("a gang's run", () => {
  it('starts only when every rank has arrived, with their hosts by rank', () => {
    const g = new Gang(3, 0);
    assert.equal(g.arrive(2, 'c', 1), false);
    assert.equal(g.arrive(0, 'a', 1), false);
    assert.equal(g.arrive(0, 'a', 2), false, 'a rank asking again is not a new arrival');
    assert.equal(g.arrive(1, 'b', 3), true);
    assert.deepEqual(g.hosts, ['a', 'b', 'c']);
  });

  it('succeeds when every rank exits 0', () => {
    const g = new Gang(2, 0);
    assert.deepEqual(g.report(1, ok), { kind: 'wait' });
    assert.deepEqual(g.report(0, ok), { kind: 'done', result: ok });
  });

  it('stops the others at the first failure and ends with it, naming its rank', () => {
    const g = new Gang(3, 0);
    assert.deepEqual(g.report(0, ok), { kind: 'wait' });
    assert.deepEqual(g.report(2, exit(3)), { kind: 'stop-others', reason: 'rank 2: exited with code 3' });
    const stopped: FinishRequest = {
      outcome: 'cancelled',
      exitCode: 143,
      signal: 'SIGTERM',
      message: 'stop',
    };
    assert.deepEqual(g.report(1, stopped), {
      kind: 'done',
      result: { ...exit(3), message: 'rank 2: exited with code 3' },
    });
  });

  it('ignores a second report of the same rank', () => {
    const g = new Gang(2, 0);
    g.report(0, ok);
    assert.deepEqual(g.report(0, exit(1)), { kind: 'wait' });
    assert.equal(g.failure(), null);
  });

  it('watches the heartbeats of the ranks still running only', () => {
    const g = new Gang(2, 0);
    g.beat(0, 100);
    g.beat(1, 50);
    assert.equal(g.oldestHeard(200), 50);
    g.report(1, ok);
    assert.equal(g.oldestHeard(200), 100, 'a rank that has ended is silent for good reason');
  });

  it('taken over while running: every rank counts as arrived', () => {
    assert.equal(new Gang(3, 0, true).complete, true);
  });
});
