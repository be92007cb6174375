/**
 * The Backfill queues' reservations as the scheduler keeps them between tries: one plan per queue
 * (backfill.ts), made once per head, capacity epoch and instant, and the window it opens for the
 * queue's candidate searches (`QueueState.window`, lane-tree.ts), so that they skip what it holds
 * back. At a new instant every window closes: time may have moved a reservation later (a job
 * outran its expected end), so what the searches skipped and what was tried and held back are
 * looked at again, and the next try behind a reservation plans it anew.
 */
import { planReservation, SJBF_AGED_MS, type BackfillPlan } from './backfill.js';
import { fits } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { WorkloadNode } from './workload-node.js';

export class BackfillPlans {
  private readonly plans = new WeakMap<QueueState, BackfillPlan>();
  /** Queues whose searches skip what their reservation holds back. */
  private readonly windows = new Set<QueueState>();

  /** @param ready puts a queue among those the next round looks at (QueueBook.ready). */
  constructor(private readonly ready: (q: QueueState) => void) {}

  /**
   * The reservation `n` must not delay, or null when `n` is its queue's first pending workload
   * (it is tried as in BestEffortFIFO).
   */
  for(q: QueueState, n: WorkloadNode, now: number): BackfillPlan | null {
    const head = q.firstPending();
    if (head === null || head === n) return null;
    const p = this.plans.get(q);
    if (p !== undefined && p.head === head && p.epoch === q.epoch && p.at === now) return p;
    const plan = planReservation(q, head, now);
    this.plans.set(q, plan);
    // Searches skip what it holds back; what an older plan held back is looked at again.
    q.window = {
      head,
      gates: plan.gates.map((g) => ({ within: g.start - now, left: g.left, byPrediction: g.byPrediction })),
      shortestFirst: plan.gates[0]?.byPrediction === true,
      agedBefore: now - SJBF_AGED_MS,
      epoch: q.epoch,
    };
    q.invalidate();
    this.windows.add(q);
    return plan;
  }

  /**
   * A new instant: every window closes (above). A queue whose reservation may have moved
   * (`BackfillPlan.movesAt`) is tried at this pass even if nothing else happened to it: without
   * an arrival or a release it would not be, and a job it held back would wait for one.
   */
  newInstant(now: number): void {
    for (const q of this.windows) {
      q.lastWindow = q.window;
      q.window = null;
      q.releaseHeldBack();
      q.invalidate();
      const p = this.plans.get(q);
      if (p !== undefined && now >= p.movesAt && q.model !== null) this.ready(q);
    }
    this.windows.clear();
  }

  /** `q`'s reservation as of the pass at `now`; null when its first workload fits. */
  current(q: QueueState, now: number): BackfillPlan | null {
    const head = q.firstPending();
    if (head === null || fits(q, head.req)) return null;
    const p = this.plans.get(q);
    if (p !== undefined && p.head === head && p.epoch === q.epoch) return p;
    // Not kept: the pass that plans it also opens the queue's window (`for`).
    return planReservation(q, head, now);
  }

  /**
   * How many reservations `q` holds as of the last pass (the metrics): its kept plan's — the
   * first and those after it (`backfill.reservations`) — while that plan is still for its head in
   * this capacity epoch; 0 when none is (its head fits, or no pass has tried behind it yet).
   */
  held(q: QueueState): number {
    const p = this.plans.get(q);
    if (p === undefined || p.epoch !== q.epoch || q.firstPending() !== p.head) return 0;
    return 1 + p.more.length;
  }

  /** `q` is no longer defined. */
  forget(q: QueueState): void {
    this.plans.delete(q);
    this.windows.delete(q);
    q.window = null;
  }
}
