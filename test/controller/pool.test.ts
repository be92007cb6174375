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
