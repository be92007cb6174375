/**
 * Preemptors' reservations: a preemptor's request counts in its queue (and so its cohort) from
 * the moment it preempts until its last victim has stopped, on top of the victims' own usage, so
 * that nobody else takes the room it counts on. See the comment at the top of scheduler.ts.
 */
import { applyUsage, fits } from './quota.js';
import type { QueueState } from './queue-state.js';
import { addTo } from './resources.js';
import type { JobId } from './types.js';
import type { WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';

export class Reservations {
  /** Preemptors waiting for their victims to stop, and the queue their request is reserved in. */
  private readonly held = new Map<WorkloadNode, QueueState>();

  constructor(
    /** The admitted workload `id`, if it still holds quota. */
    private readonly admitted: (id: JobId) => AdmittedNode | undefined,
    /** Who could be preempted, or how much room there is, changed. */
    private readonly changed: () => void,
  ) {}

  /** Counts preemptor `n`'s request in `q` (and its cohort) until its victims have stopped. */
  reserve(q: QueueState, n: WorkloadNode): void {
    applyUsage(q, n.req, 1);
    addTo(q.reserved, n.req, 1);
    this.held.set(n, q);
    this.changed();
  }

  /** Drops `n`'s reservation, if any; returns the queue it was in. */
  release(n: WorkloadNode): QueueState | null {
    const q = this.held.get(n);
    if (q === undefined) return null;
    this.held.delete(n);
    applyUsage(q, n.req, -1);
    addTo(q.reserved, n.req, -1);
    this.changed();
    return q;
  }

  /**
   * Whether reserving `n`'s request in `q` (its victims still holding theirs) leaves every
   * preemptor already waiting in the cohort room to fit once its own victims have stopped. `n`
   * counts on its victims' quota, which is not free until they stop: without this check it could
   * take room another preemptor counts on. If not, `n` waits as if it could not preempt, until
   * capacity changes. O(waiting preemptors × their victims), only while some wait in the cohort.
   */
  keptWith(q: QueueState, n: WorkloadNode): boolean {
    const c = q.cohort;
    if (c === null || this.held.size === 0) return true;
    applyUsage(q, n.req, 1);
    let ok = true;
    for (const [p, pq] of this.held) {
      if (pq.cohort === c && !this.fitsOnceStopped(p, pq)) {
        ok = false;
        break;
      }
    }
    applyUsage(q, n.req, -1);
    return ok;
  }

  /** Whether waiting preemptor `p` fits in `pq` once its remaining victims have stopped. */
  private fitsOnceStopped(p: WorkloadNode, pq: QueueState): boolean {
    const gone: AdmittedNode[] = [];
    for (const id of p.waitingFor ?? []) {
      const v = this.admitted(id);
      if (v !== undefined) gone.push(v);
    }
    applyUsage(pq, p.req, -1);
    for (const v of gone) applyUsage(v.holder, v.req, -1);
    const ok = fits(pq, p.req);
    for (let i = gone.length - 1; i >= 0; i--) {
      const v = gone[i] as AdmittedNode;
      applyUsage(v.holder, v.req, 1);
    }
    applyUsage(pq, p.req, 1);
    return ok;
  }
}
