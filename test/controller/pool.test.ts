/**
 * A factory's pool with devices (controller/pool.ts), from tables: who is handed out next, given
 * the workers and devices in use and the line of waiters.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Pool } from '../../src/controller/pool.js';
import type { Waiter } from '../../src/controller/waitlist.js';

const waiter = (id: number, requests: Record<string, number> = {}, workers = 1): Waiter => ({
  id,
  priority: 0,
  createdAt: id,
  workers,
  requests,
});

interface Case {
  what: string;
  capacity: number;
  gpus: number;
  /** Workers and gpus in use before. */
  inUse: number;
  gpusInUse: number;
  line: Waiter[];
  /** The ids handed out, in order, until the pool hands out no more. */
  handed: number[];
}

const cases: Case[] = [
  {
    what: 'two gpu jobs on two free gpus',
    capacity: 4,
    gpus: 2,
    inUse: 0,
    gpusInUse: 0,
    line: [waiter(1, { gpu: 1 }), waiter(2, { gpu: 1 })],
    handed: [1, 2],
  },
  {
    what: 'a third gpu job waits for a gpu',
    capacity: 4,
    gpus: 2,
    inUse: 2,
    gpusInUse: 2,
    line: [waiter(3, { gpu: 1 })],
    handed: [],
  },
  {
    what: 'a cpu job passes a head that waits for gpus only',
    capacity: 4,
    gpus: 2,
    inUse: 2,
    gpusInUse: 2,
    line: [waiter(3, { gpu: 1 }), waiter(4)],
    handed: [4],
  },
  {
    what: 'but never takes the worker the head will need',
    capacity: 3,
    gpus: 2,
    inUse: 2,
    gpusInUse: 2,
    line: [waiter(3, { gpu: 1 }), waiter(4)],
    handed: [],
  },
  {
    what: 'nor does another gpu job pass it',
    capacity: 4,
    gpus: 2,
    inUse: 1,
    gpusInUse: 1,
    line: [waiter(3, { gpu: 2 }), waiter(4, { gpu: 1 })],
    handed: [],
  },
  {
    what: 'a gang takes a gpu per member, all at once',
    capacity: 4,
    gpus: 2,
    inUse: 0,
    gpusInUse: 0,
    line: [waiter(5, { gpu: 2 }, 2), waiter(6, { gpu: 1 })],
    handed: [5],
  },
  {
    what: 'a head short of workers blocks everyone (gangs are not starved)',
    capacity: 2,
    gpus: 2,
    inUse: 1,
    gpusInUse: 0,
    line: [waiter(7, {}, 2), waiter(8)],
    handed: [],
  },
];

describe('a factory pool with devices', () => {
  for (const c of cases)
    it(c.what, () => {
      const pool = new Pool<Waiter>('factory', 'f', c.capacity, { gpu: c.gpus });
      pool.inUse = c.inUse;
      pool.hold({ gpu: c.gpusInUse });
      for (const w of c.line) pool.waitlist.add(w);
      const handed: number[] = [];
      for (let w = pool.take(); w; w = pool.take()) handed.push(w.id);
      assert.deepEqual(handed, c.handed);
      assert.ok(pool.inUse <= c.capacity && (pool.devicesInUse.gpu ?? 0) <= c.gpus, 'never more than it has');
    });

  it('gives back what a worker held when it is freed', () => {
    const pool = new Pool<Waiter>('factory', 'f', 2, { gpu: 1 });
    pool.waitlist.add(waiter(1, { gpu: 1 }));
    const w = pool.take()!;
    pool.waitlist.add(waiter(2, { gpu: 1 }));
    assert.equal(pool.take(), undefined);
    pool.free(1, pool.devicesOf(w));
    assert.equal(pool.take()?.id, 2);
  });
});

describe('a pool whose head waits for units: its reservation', () => {
  const timed = (id: number, timeoutSeconds: number | null, workers = 1): Waiter => ({
    id,
    priority: 0,
    createdAt: id,
    workers,
    timeoutSeconds,
  });

  interface BackfillCase {
    what: string;
    capacity: number;
    /** When each unit in use is expected free, in seconds from now (null: no timeout). */
    held: (number | null)[];
    line: Waiter[];
    handed: number[];
  }

  const cases: BackfillCase[] = [
    {
      what: 'a job that ends before the gang can start goes now; a longer one, or one without a timeout, waits',
      capacity: 4,
      held: [100, 200, 300],
      line: [timed(1, null, 4), timed(2, 400), timed(3, null), timed(4, 250)],
      handed: [4],
    },
    {
      what: 'nobody overtakes while a unit in use has no expected end',
      capacity: 4,
      held: [100, 200, null],
      line: [timed(1, null, 4), timed(2, 10)],
      handed: [],
    },
    {
      what: 'a job without a timeout goes in what the reservation leaves spare',
      capacity: 6,
      held: [100, 100, 100],
      line: [timed(1, null, 5), timed(2, null)],
      handed: [2],
    },
    {
      what: 'but not beyond it: two would take the unit the gang needs',
      capacity: 6,
      held: [100, 100, 100],
      line: [timed(1, null, 5), timed(2, null, 2)],
      handed: [],
    },
  ];

  for (const c of cases)
    it(c.what, () => {
      const pool = new Pool<Waiter>('factory', 'f', c.capacity);
      pool.inUse = c.held.length;
      const ends = c.held.map((s) => ({ units: 1, at: s === null ? Infinity : s * 1000 }));
      pool.plan = {
        now: () => 0,
        graceMs: 0,
        // What is handed out holds its units: with no timeout, until who knows when.
        ends: () => ends,
      };
      for (const w of c.line) pool.waitlist.add(w);
      const handed: number[] = [];
      for (let w = pool.take(); w; w = pool.take()) {
        handed.push(w.id);
        ends.push({ units: pool.unitsOf(w), at: w.timeoutSeconds ? w.timeoutSeconds * 1000 : Infinity });
      }
      assert.deepEqual(handed, c.handed);
      assert.equal(pool.waitlist.peek()?.id, 1, 'the gang keeps its place at the head');
    });

  it('says whom a job went ahead of, and nobody when it was the head', () => {
    const pool = new Pool<Waiter>('factory', 'f', 4);
    pool.inUse = 3;
    pool.plan = {
      now: () => 0,
      graceMs: 0,
      ends: () => [100, 200, 300].map((s) => ({ units: 1, at: s * 1000 })),
    };
    pool.waitlist.add(timed(1, null, 4));
    pool.waitlist.add(timed(2, 50));
    assert.equal(pool.take()?.id, 2);
    assert.equal(pool.wentAheadOf?.id, 1);
    pool.inUse = 0;
    assert.equal(pool.take()?.id, 1);
    assert.equal(pool.wentAheadOf, undefined);
  });

  it('gives no reservation without a plan: the head blocks everyone, as before', () => {
    const pool = new Pool<Waiter>('factory', 'f', 4);
    pool.inUse = 3;
    pool.waitlist.add(timed(1, null, 4));
    pool.waitlist.add(timed(2, 1));
    assert.equal(pool.take(), undefined);
  });
});
