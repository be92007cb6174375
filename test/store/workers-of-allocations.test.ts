/**
 * workersOfLastAllocations in the suite's store: an ended job's worker as its last allocation
 * recorded it, whatever job that worker's own row names now (a pilot moves on to other jobs).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Allocation } from '../../src/domain/usage.js';
import { recordAllocation } from '../../src/store/queries/usage.js';
import { insertWorker, updateWorker, workersOfLastAllocations } from '../../src/store/queries/workers.js';
import { storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';

const server = useTestServer();
const T0 = Date.parse('2026-11-01T00:00:00Z');

/** An ended allocation of `jobId`'s attempt `attempt`, on `workerId`. */
const allocation = (jobId: number, attempt: number, workerId: number | null): Allocation => ({
  jobId,
  attempt,
  project: 'p',
  name: 'job',
  user: 'ann',
  queue: 'q',
  target: 'short',
  workerId,
  workers: 1,
  requests: {},
  queuedAt: T0,
  admittedAt: T0,
  startedAt: T0,
  endedAt: T0 + attempt * 1000,
  outcome: attempt === 1 ? 'retried' : 'succeeded',
  final: attempt !== 1,
});

describe('the worker of an ended job', () => {
  it("is its last allocation's, also when the worker has run other jobs since; none without one", async () => {
    const { db } = storeOf(server());
    const w = { factory: 'hpc', target: 'short' };
    // 9001: attempt 1 on a fresh worker, attempt 2 on a pilot that then ran 9002 and now runs 9004.
    const fresh = await insertWorker(db, { ...w, jobId: 9001 }, T0);
    const pilot = await insertWorker(db, { ...w, jobId: 9001 }, T0);
    await updateWorker(db, pilot, { jobId: 9004, state: 'ready' }, T0 + 5000);
    for (const a of [allocation(9001, 2, pilot), allocation(9001, 1, fresh), allocation(9002, 1, pilot)])
      await recordAllocation(db, a, {});
    // 9003: ended before it had a worker (cancelled while queued).
    await recordAllocation(db, allocation(9003, 1, null), {});
    const got = await workersOfLastAllocations(db, [9001, 9002, 9003, 9005]);
    assert.deepEqual([...got].map(([job, r]) => [job, r.id, r.jobId, r.state]).sort(), [
      [9001, pilot, 9004, 'ready'],
      [9002, pilot, 9004, 'ready'],
    ]);
    assert.equal((await workersOfLastAllocations(db, [])).size, 0);
  });
});
