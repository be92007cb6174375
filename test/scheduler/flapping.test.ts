/**
 * Anti-flapping: two queues of a cohort must not evict each other in turn at one instant. Found
 * by `berth simulate` on Kueue's baseline with `--quota cq=22`: a preemptor that borrowed while
 * evicting in its own queue was reclaimed by the lender, whose waiting workload then borrowed
 * back the same way, and so on forever.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Scheduler, type Decision } from '../../src/scheduler/index.js';
import { admittedWorkload, queueModel, workload } from './helpers.js';

const cpu = (n: number) => ({ cpu: String(n) });

/** Runs passes at one instant, stopping every victim at once, until nothing more happens. */
function settle(
  s: Scheduler,
  now: number,
  maxPasses: number,
): { passes: number; evictions: Map<number, number> } {
  const evictions = new Map<number, number>();
  for (let pass = 1; pass <= maxPasses; pass++) {
    const decisions: Decision[] = s.schedule(now);
    if (decisions.length === 0) return { passes: pass, evictions };
    for (const d of decisions) {
      if (d.kind !== 'preempt') continue;
      for (const v of d.victims) {
        evictions.set(v, (evictions.get(v) ?? 0) + 1);
        s.requeue(v);
      }
    }
  }
  return { passes: Infinity, evictions };
}

describe('preemption does not flap between queues of a cohort', () => {
  it('a preemptor does not borrow quota a waiting lender would reclaim at once', () => {
    const s = new Scheduler();
    for (const name of ['a', 'b'])
      s.upsertQueue(
        queueModel({ name, nominal: cpu(4), cohort: 'c', reclaim: 'Any', within: 'LowerPriority' }),
      );
    for (const w of [
      { id: 1, queue: 'a', requests: cpu(2), priority: 200, createdAt: 1 },
      { id: 25, queue: 'a', requests: cpu(1), priority: 50, createdAt: 1100 },
      { id: 2, queue: 'b', requests: cpu(2), priority: 200, createdAt: 2 },
      { id: 26, queue: 'b', requests: cpu(1), priority: 50, createdAt: 1100 },
      { id: 29, queue: 'b', requests: cpu(1), priority: 50, createdAt: 1200 },
    ])
      s.restoreAdmitted(admittedWorkload(w));
    for (const w of [
      { id: 22, queue: 'a', requests: cpu(3), priority: 100, createdAt: 1000 },
      { id: 24, queue: 'b', requests: cpu(3), priority: 100, createdAt: 1000 },
      { id: 27, queue: 'a', requests: cpu(1), priority: 50, createdAt: 1200 },
    ])
      s.enqueue(workload(w));

    const { passes, evictions } = settle(s, 5000, 100);
    assert.ok(passes < 100, 'the passes at one instant come to rest');
    for (const [id, n] of evictions) assert.ok(n <= 1, `workload ${id} evicted ${n} times at one instant`);
    // Neither queue ends above the cohort's capacity, and a's waiting work got its nominal.
    assert.equal(s.queueFigures('a')?.usage.cpu, 4000);
  });

  it('still borrows while preempting when no lender waits', () => {
    const s = new Scheduler();
    s.upsertQueue(
      queueModel({ name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any', within: 'LowerPriority' }),
    );
    s.upsertQueue(
      queueModel({ name: 'b', nominal: cpu(4), cohort: 'c', reclaim: 'Any', within: 'LowerPriority' }),
    );
    // The cohort has 1 cpu free; a is below its nominal but waits for nothing.
    s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'b', requests: cpu(2), priority: 10 }));
    s.restoreAdmitted(admittedWorkload({ id: 5, queue: 'b', requests: cpu(2), priority: 200 }));
    s.restoreAdmitted(admittedWorkload({ id: 2, queue: 'a', requests: cpu(3), priority: 10 }));
    s.enqueue(workload({ id: 3, queue: 'b', requests: cpu(3), priority: 100 }));
    const first = s.schedule(10);
    assert.deepEqual(
      first.filter((d) => d.kind === 'preempt').map((d) => (d.kind === 'preempt' ? d.victims : [])),
      [[1]],
    );
  });
});
