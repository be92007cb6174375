/**
 * The scheduler's read side: why a workload waits, a queue's figures, its admission order, and
 * the workloads holding quota (for a forecast's snapshot). It reads the scheduler's state and
 * changes nothing, so the decisions (scheduler.ts) and the answers about them stay apart.
 */
import { explainWorkload } from './explain.js';
import { mergedOrder } from './fair-share.js';
import { borrowedNow, ownUsage } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { ResourceIndex } from './resources.js';
import type { AdmittedWorkload, Explanation, JobId, PendingStatus, QueueFigures } from './types.js';
import type { WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';

export class SchedulerView {
  constructor(
    private readonly res: ResourceIndex,
    private readonly queues: ReadonlyMap<string, QueueState>,
    private readonly pending: ReadonlyMap<JobId, WorkloadNode>,
    private readonly admitted: ReadonlyMap<JobId, AdmittedNode>,
    private readonly weightOf: (project: string) => number,
  ) {}

  explain(id: JobId): Explanation | undefined {
    const n = this.pending.get(id);
    const q = n && this.queues.get(n.queue);
    return q && explainWorkload(q, n, this.weightOf);
  }

  queueFigures(name: string): QueueFigures | undefined {
    const q = this.queues.get(name);
    if (q === undefined || q.model === null) return undefined;
    return {
      usage: this.res.amounts(q.usage.map((_, i) => ownUsage(q, i))),
      borrowed: borrowedNow(q),
      pending: q.pendingCount,
      admitted: q.admitted.size,
      cohort: q.model.cohort,
      nominal: q.model.nominal,
      borrowingLimit: q.model.borrowingLimit,
      lendingLimit: q.model.lendingLimit,
    };
  }

  /** A queue's pending workloads by status (types.ts, PendingStatus). */
  pendingStatus(name: string): PendingStatus | undefined {
    const q = this.queues.get(name);
    if (q === undefined || q.model === null) return undefined;
    const n = q.pendingCount;
    if (q.holds) return { active: 0, inadmissible: 0, held: n };
    const inadmissible = q.inadmissible();
    return { active: n - inadmissible, inadmissible, held: 0 };
  }

  /** Every workload that holds quota (being evicted or not), for a forecast's snapshot. */
  *admittedWorkloads(): Iterable<AdmittedWorkload> {
    for (const n of this.admitted.values())
      yield {
        id: n.id,
        queue: n.queue,
        project: n.project,
        priority: n.priority,
        createdAt: n.createdAt,
        requests: this.res.amounts(n.req),
        admittedAt: n.admittedAt,
        borrowed: n.borrowed,
        // What Backfill plans with, so that a forecast replays the same plans.
        timeoutMs: n.timeoutMs === Infinity ? null : n.timeoutMs,
        expectedMs: n.predictedMs === Infinity ? null : n.predictedMs,
      };
  }

  /** A queue's pending workloads in admission order, from `offset`. */
  pendingIds(queue: string, offset: number, limit: number): JobId[] {
    const q = this.queues.get(queue);
    if (q === undefined) return [];
    const lanes = [...q.lanes.values()];
    return mergedOrder(lanes, q.limits, this.weightOf, q.round, Math.max(0, offset), limit).map((n) => n.id);
  }
}
