/**
 * What the metrics read of the scheduler (issue #43): each queue's pending workloads by status —
 * held while the queue is on hold, inadmissible when they cannot be admitted before quota is
 * released (they do not fit, or a Backfill reservation holds them back; in StrictFIFO all of them
 * behind a blocked head), active otherwise — the reservations it holds, and the depth of a pass.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Scheduler } from '../../src/scheduler/index.js';
import { queueModel, workload, type QueueSpec, type WorkloadSpec } from './helpers.js';

function scheduler(queue: QueueSpec, ...pending: WorkloadSpec[]): Scheduler {
  const s = new Scheduler();
  s.upsertQueue(queueModel(queue));
  for (const w of pending) s.enqueue(workload(w));
  return s;
}

describe('pending status and reservations (metrics)', () => {
  it('BestEffortFIFO: what fits the room left is active until a pass admits it; what does not, inadmissible', () => {
    const s = scheduler(
      { name: 'q', nominal: { cpu: 4 } },
      { id: 1, queue: 'q', requests: { cpu: 3 } },
      { id: 2, queue: 'q', requests: { cpu: 2 } },
      { id: 3, queue: 'q', requests: { cpu: 1 } },
      { id: 4, queue: 'q', requests: { cpu: 1 }, project: 'other' },
    );
    // Nothing holds quota yet: each fits alone.
    assert.deepEqual(s.pendingStatus('q'), { active: 4, inadmissible: 0, held: 0 });
    // Fair share: project p's first, then the other project's.
    const admitted = s.schedule(0).map((d) => (d.kind === 'admit' ? d.id : -1));
    assert.deepEqual(admitted.sort(), [1, 4]);
    // It tried 1 and 4; then nothing pending fits, which it sees without trying each.
    assert.equal(s.passDepth(), 2);
    // No cpu left: 2 (2 cpu) and 3 (1 cpu) wait for a release.
    assert.deepEqual(s.pendingStatus('q'), { active: 0, inadmissible: 2, held: 0 });
    s.release(4);
    // A release: 3 fits again, 2 still does not.
    assert.deepEqual(s.pendingStatus('q'), { active: 1, inadmissible: 1, held: 0 });
  });

  it('StrictFIFO: every job waits behind a head that does not fit', () => {
    const s = scheduler(
      { name: 'q', nominal: { cpu: 4 }, strategy: 'StrictFIFO' },
      { id: 1, queue: 'q', requests: { cpu: 3 } },
      { id: 2, queue: 'q', requests: { cpu: 2 } },
      { id: 3, queue: 'q', requests: { cpu: 1 } },
    );
    s.schedule(0);
    assert.deepEqual(s.pendingStatus('q'), { active: 0, inadmissible: 2, held: 0 });
    s.release(1);
    // A release: the head is tried again at the next pass.
    assert.deepEqual(s.pendingStatus('q'), { active: 2, inadmissible: 0, held: 0 });
  });

  it('a queue on hold holds every pending job', () => {
    const s = scheduler(
      { name: 'q', nominal: { cpu: 4 }, stop: 'Hold' },
      { id: 1, queue: 'q', requests: { cpu: 1 } },
      { id: 2, queue: 'q', requests: { cpu: 8 } },
    );
    s.schedule(0);
    assert.deepEqual(s.pendingStatus('q'), { active: 0, inadmissible: 0, held: 2 });
    assert.deepEqual(s.reservationsHeld('q'), { backfill: 0, preemption: 0 });
    assert.equal(s.pendingStatus('missing'), undefined);
  });

  it('Backfill: the reservation is held, and what it holds back is inadmissible', () => {
    const s = new Scheduler();
    s.upsertQueue(queueModel({ name: 'bf', nominal: { cpu: 4 }, strategy: 'Backfill' }));
    s.restoreAdmitted({
      ...workload({ id: 1, queue: 'bf', requests: { cpu: 3 }, timeout: 600 }),
      admittedAt: 0,
      borrowed: {},
    });
    for (const w of [
      { id: 2, queue: 'bf', requests: { cpu: 4 }, timeout: 60 }, // the head: does not fit
      { id: 3, queue: 'bf', requests: { cpu: 1 } }, // no timeout: may only use what the reservation leaves
    ])
      s.enqueue(workload(w));
    assert.deepEqual(s.schedule(1000), []);
    assert.deepEqual(s.reservationsHeld('bf'), { backfill: 1, preemption: 0 });
    assert.deepEqual(s.pendingStatus('bf'), { active: 0, inadmissible: 2, held: 0 });
    // A later pass, nothing changed: the reservation has not moved, so the queue is not tried
    // again, and what it held back is still held back (the count once flickered to active here).
    assert.deepEqual(s.schedule(1500), []);
    assert.deepEqual(s.pendingStatus('bf'), { active: 0, inadmissible: 2, held: 0 });
    // Ends long before the reservation: backfilled.
    s.enqueue(workload({ id: 4, queue: 'bf', requests: { cpu: 1 }, timeout: 60 }));
    assert.deepEqual(
      s.schedule(2000).map((d) => d.kind === 'admit' && d.backfilledAhead),
      [2],
    );
  });

  it("a preemptor's reservation is held while its victims stop", () => {
    const s = new Scheduler();
    s.upsertQueue(queueModel({ name: 'q', nominal: { cpu: 2 }, within: 'LowerPriority' }));
    s.restoreAdmitted({
      ...workload({ id: 1, queue: 'q', requests: { cpu: 2 } }),
      admittedAt: 0,
      borrowed: {},
    });
    s.enqueue(workload({ id: 2, queue: 'q', requests: { cpu: 2 }, priority: 10 }));
    assert.deepEqual(
      s.schedule(1).map((d) => d.kind),
      ['preempt'],
    );
    assert.deepEqual(s.reservationsHeld('q'), { backfill: 0, preemption: 1 });
    s.requeue(1);
    assert.deepEqual(s.reservationsHeld('q'), { backfill: 0, preemption: 0 });
  });
});
