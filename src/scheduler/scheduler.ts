/**
 * The pure scheduler: a deterministic in-memory model of queues, cohorts, pending and admitted
 * workloads. No I/O and no clock: time comes in as arguments.
 *
 * A scheduling pass works in rounds, as Kueue's cycles do: each round takes the head of every
 * queue that may make progress, orders those heads (the ones that fit without borrowing first,
 * then priority, then creation), and tries each: admit if it fits; else preempt if the rules
 * allow; else StrictFIFO blocks the queue until capacity changes and BestEffortFIFO parks the
 * workload for the rest of the capacity epoch; Backfill parks it too, but its queue's first workload
 * that does not fit holds a reservation that later ones may not delay (backfill.ts). Each try is O(log n) in the pending backlog (see
 * queue-state.ts and lane-tree.ts); preemption costs O(a log a) in the admitted workloads it
 * looks at. Queues with nothing to do are not looked at again until an event concerns them.
 *
 * A preemption reserves the preemptor's request in its queue (and so in its cohort) at once, on
 * top of its victims' usage, which stays counted until each of them has stopped: while the victims
 * stop, nobody else (a victim requeued meanwhile included) can take the quota the preemptor counts
 * on, neither what its victims free nor what was free already; quota beyond its needs is released
 * as the victims stop. When the last one has stopped (requeued, or released: it may end on its
 * own), the reservation is dropped and the next pass tries the preemptor first, before any other
 * queue, so it is admitted in the room kept for it. A preemptor withdrawn meanwhile releases it.
 * A preemption is decided only if it leaves every preemptor already waiting in the cohort room to
 * fit once its own victims have stopped; so once decided, a preemption is never made in vain.
 */
import type { Amounts } from '../domain/quantity.js';
import { backfilled, mayBackfill } from './backfill.js';
import { BackfillPlans } from './backfill-plans.js';
import { Drains } from './drains.js';
import { explainBackfill } from './backfill-explain.js';
import { TreapRandom } from './lane-tree.js';
import { compareKeys, type OrderKey } from './ordering.js';
import { preemptionReach, selectVictims } from './preemption.js';
import { applyUsage, borrowedFor, fits, limitsOf, NO_LIMITS, wouldBorrow } from './quota.js';
import { QueueBook } from './queue-book.js';
import type { QueueState } from './queue-state.js';
import { SchedulerView } from './scheduler-view.js';
import { Reservations } from './reservations.js';
import { addTo, ResourceIndex } from './resources.js';
import { markAdmitted, WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';
import type {
  AdmittedWorkload,
  Decision,
  Explanation,
  JobId,
  QueueFigures,
  QueueModel,
  PendingStatus,
  ReservationsHeld,
  SchedulerApi,
  Workload,
} from './types.js';

interface Entry {
  q: QueueState;
  n: WorkloadNode;
  borrows: boolean;
}

const entryOrder = (a: Entry, b: Entry): number =>
  a.borrows !== b.borrows ? (a.borrows ? 1 : -1) : compareKeys(a.n, b.n);

export class Scheduler implements SchedulerApi {
  private readonly res = new ResourceIndex();
  private readonly random = new TreapRandom();
  /** The queues and cohorts, the projects' weights, and which queues are ready (queue-book.ts). */
  private readonly book = new QueueBook((q) => this.reachOf(q));
  private readonly pending = new Map<JobId, WorkloadNode>();
  private readonly admitted = new Map<JobId, AdmittedNode>();
  /**
   * The interactive workloads (Workload.interactive), pending or admitted: few, so a set of their
   * own rather than a field on every node of a million.
   */
  private readonly interactive = new Set<JobId>();
  /** Whether an admitted workload is no candidate for preemption: interactive, where its queue says Never. */
  private readonly spared = (rec: AdmittedNode): boolean =>
    this.interactive.has(rec.id) && (rec.holder.model?.preemption.interactive ?? 'Never') === 'Never';
  private readonly drains = new Drains(
    (id) => this.admitted.get(id),
    (rec) => this.deactivate(rec),
  );
  private readonly reservations = new Reservations(
    (id) => this.admitted.get(id),
    () => this.version++,
  );
  /** Backfill queues: the reservation of the first workload that does not fit (backfill-plans.ts). */
  private readonly plans = new BackfillPlans((q) => this.book.ready.add(q));
  /**
   * Workloads enqueued since the last pass: no pass has weighed them yet, so what is said of them
   * is provisional (a Backfill queue's reservations, planned before they came, leave them out).
   */
  private readonly unseen = new Set<JobId>();
  /** Preemptors whose victims have all stopped: the next pass tries them first, in this order. */
  private readonly resuming = new Set<WorkloadNode>();
  /** The instant of the last pass: what explanations plan reservations at. */
  private lastNow = 0;
  /** Workloads the last pass tried (`passDepth`). */
  private depth = 0;
  private seq = 0;
  /** Bumped whenever who could be preempted changes; keys the per-queue preemption reach cache. */
  private version = 0;
  private readonly reachCache = new WeakMap<QueueState, { version: number; reach: OrderKey | null }>();

  /** Answers about the state, for the API and forecasts; it reads the maps above, never writes. */
  private readonly view = new SchedulerView(
    this.res,
    this.book.queues,
    this.pending,
    this.admitted,
    this.book.weightOf,
  );

  private readonly reachOf = (q: QueueState): OrderKey | null => {
    const cached = this.reachCache.get(q);
    if (cached !== undefined && cached.version === this.version) return cached.reach;
    const reach = preemptionReach(q);
    this.reachCache.set(q, { version: this.version, reach });
    return reach;
  };

  // ---- definitions -------------------------------------------------------------------------

  upsertQueue(model: QueueModel): void {
    const q = this.book.queue(model.name);
    q.model = {
      ...model,
      nominal: { ...model.nominal },
      borrowingLimit: { ...model.borrowingLimit },
      lendingLimit: { ...model.lendingLimit },
      preemption: { ...model.preemption },
    };
    q.limits = limitsOf(model, this.res);
    this.book.setCohort(q, model.cohort);
    q.invalidate();
    q.blockedHead = null;
    this.drains.set(q);
    this.version++;
    this.book.bump(q);
  }

  removeQueue(name: string): void {
    const q = this.book.queues.get(name);
    if (q === undefined || q.model === null) return;
    this.book.setCohort(q, null);
    q.model = null;
    q.limits = NO_LIMITS;
    q.invalidate();
    this.drains.forget(q);
    this.plans.forget(q);
    this.book.ready.delete(q);
    this.version++;
    this.book.forget(q);
  }

  setProjectWeight(project: string, weight: number): void {
    if (!Number.isFinite(weight) || weight <= 0) {
      throw new RangeError(`weight of project ${project} must be a positive number, got ${weight}`);
    }
    this.book.setWeight(project, weight);
  }

  // ---- workloads ---------------------------------------------------------------------------

  enqueue(w: Workload): void {
    this.forget(w.id);
    if (w.interactive) this.interactive.add(w.id);
    this.unseen.add(w.id);
    this.addPending(new WorkloadNode(w, this.res.vec(w.requests), this.random.next()));
  }

  withdraw(id: JobId): boolean {
    const n = this.pending.get(id);
    if (n === undefined) return false;
    this.interactive.delete(id);
    this.dropPending(n);
    return true;
  }

  restoreAdmitted(w: AdmittedWorkload): void {
    this.forget(w.id);
    if (w.interactive) this.interactive.add(w.id);
    const q = this.book.queue(w.queue);
    const n = new WorkloadNode(w, this.res.vec(w.requests), this.random.next());
    this.hold(q, n, w.admittedAt, { ...w.borrowed });
    if (q.model?.stopPolicy === 'HoldAndDrain') {
      this.drains.add(q, w.id);
    }
  }

  release(id: JobId): void {
    const rec = this.admitted.get(id);
    if (rec === undefined) return;
    this.interactive.delete(id);
    this.unhold(rec);
    this.book.bump(rec.holder);
  }

  requeue(id: JobId): void {
    const rec = this.admitted.get(id);
    if (rec === undefined) return;
    this.unhold(rec);
    this.book.bump(rec.holder);
    rec.resetAdmission();
    this.addPending(rec);
  }

  // ---- scheduling --------------------------------------------------------------------------

  schedule(now: number, max = Infinity): Decision[] {
    if (now !== this.lastNow) this.plans.newInstant(now);
    this.lastNow = now;
    this.depth = 0;
    const out: Decision[] = [];
    if (!(max > 0)) return out;
    // This pass weighs every pending workload: a Backfill queue's plan is made with them.
    this.unseen.clear();
    this.resume(now, out, max);
    this.drains.emit(out, max);
    while (out.length < max && this.book.ready.size > 0) {
      const entries: Entry[] = [];
      for (const q of this.book.ready) {
        const n = q.head();
        if (n === null) this.book.ready.delete(q);
        else entries.push({ q, n, borrows: wouldBorrow(q, n.req) });
      }
      if (entries.length === 0) break;
      entries.sort(entryOrder);
      for (const e of entries) {
        if (out.length >= max) break;
        this.attempt(e.q, e.n, now, out);
      }
    }
    return out;
  }

  /** Tries `n`; `resumed`: a preemptor whose victims have stopped, in the room kept for it. */
  private attempt(q: QueueState, n: WorkloadNode, now: number, out: Decision[], resumed = false): void {
    this.depth++;
    const plan = q.backfill && !resumed ? this.plans.for(q, n, now) : null;
    if (plan !== null) {
      // Learned estimates: the plan's window offers the shortest first (lane-tree.ts); try that.
      if (q.window?.shortestFirst === true && q.head() !== n) return;
      // Behind a reservation (backfill.ts): no preemption, and only what cannot delay it.
      const fitsNow = fits(q, n.req);
      if (fitsNow && mayBackfill(q, plan, n, now)) {
        backfilled(q, plan, n, now);
        return this.admit(q, n, now, out, plan.head.id);
      }
      // Held back fits again at a later instant, when time may have moved the reservation.
      if (fitsNow) q.holdBack(n);
      else q.park(n);
      q.settleIfFull();
      return;
    }
    if (fits(q, n.req)) return this.admit(q, n, now, out);
    const victims = selectVictims(q, n, this.interactive.size === 0 ? undefined : this.spared);
    if (victims !== null && victims.length > 0 && this.reservations.keptWith(q, n)) {
      const ids = victims.map((v) => v.id);
      for (const v of victims) {
        this.deactivate(v);
        v.evicting = 'preempted';
        v.preemptor = n.id;
      }
      n.waitingFor = new Set(ids);
      q.preemptor = n;
      this.reservations.reserve(q, n);
      this.book.ready.delete(q);
      const others = victims.some((v) => v.holder !== q) ? ', reclaiming quota lent to the cohort' : '';
      out.push({
        kind: 'preempt',
        preemptor: n.id,
        victims: ids,
        reason: `preempted for job ${n.id} (priority ${n.priority}) in queue ${q.name}${others}`,
      });
      return;
    }
    if (q.strict) {
      q.blockedHead = n.id;
      q.blockedEpoch = q.epoch;
    } else {
      q.park(n);
      q.settleIfFull();
    }
  }

  private admit(q: QueueState, n: WorkloadNode, now: number, out: Decision[], ahead?: JobId): void {
    const borrowed = borrowedFor(q, n.req);
    this.pending.delete(n.id);
    this.hold(q, n, now, borrowed);
    q.removePending(n);
    out.push({
      kind: 'admit',
      id: n.id,
      queue: q.name,
      borrowed,
      ...(ahead === undefined ? {} : { backfilledAhead: ahead }),
    });
  }

  /**
   * Preemptors whose victims have all stopped go first, in the room their reservation kept (a
   * backfill reservation made since does not hold them back: the room was theirs first). One
   * that does not fit (a definition changed) is tried like any head; one on hold waits like the
   * rest of its queue. Either way the room it does not take is free for others: new epoch.
   */
  private resume(now: number, out: Decision[], max: number): void {
    for (const p of this.resuming) {
      if (out.length >= max) return;
      this.resuming.delete(p);
      const q = this.book.queues.get(p.queue);
      if (q === undefined || this.pending.get(p.id) !== p) continue;
      if (q.model !== null && !q.holds) this.attempt(q, p, now, out, true);
      if (this.pending.get(p.id) === p && p.waitingFor === null) this.book.bump(q);
    }
  }

  // ---- read side (scheduler-view.ts) --------------------------------------------------------

  explain(id: JobId): Explanation | undefined {
    const e = this.view.explain(id);
    if (e !== undefined && this.unseen.has(id)) return { ...e, provisional: true };
    const n = this.pending.get(id);
    const q = n === undefined ? undefined : this.book.queues.get(n.queue);
    if (e === undefined || n === undefined || q === undefined || !q.backfill || q.holds) return e;
    if (n.waitingFor !== null || q.preemptor !== null) return e;
    const p = this.plans.current(q, this.lastNow);
    return p === null ? e : explainBackfill(e, q, n, p);
  }

  queueFigures(name: string): QueueFigures | undefined {
    return this.view.queueFigures(name);
  }

  admittedWorkloads(): Iterable<AdmittedWorkload> {
    return this.view.admittedWorkloads();
  }

  pendingStatus(name: string): PendingStatus | undefined {
    return this.view.pendingStatus(name);
  }

  reservationsHeld(name: string): ReservationsHeld | undefined {
    const q = this.book.queues.get(name);
    if (q === undefined || q.model === null) return undefined;
    const backfill = q.backfill && !q.holds ? this.plans.held(q) : 0;
    return { backfill, preemption: q.preemptor === null ? 0 : 1 };
  }

  passDepth(): number {
    return this.depth;
  }

  projectWeights(): Iterable<[string, number]> {
    return this.book.projectWeights();
  }

  pendingIds(queue: string, offset: number, limit: number): JobId[] {
    return this.view.pendingIds(queue, offset, limit);
  }

  // ---- bookkeeping -------------------------------------------------------------------------

  /** Removes whatever is known about `id`, so that it can be entered afresh. */
  private forget(id: JobId): void {
    const n = this.pending.get(id);
    if (n !== undefined) this.dropPending(n);
    if (this.admitted.has(id)) this.release(id);
  }

  private addPending(n: WorkloadNode): void {
    this.pending.set(n.id, n);
    const q = this.book.queue(n.queue);
    q.addPending(n);
    if (q.model !== null) this.book.ready.add(q);
  }

  private dropPending(n: WorkloadNode): void {
    this.pending.delete(n.id);
    // A preemptor that goes (withdrawn) gives back the quota kept for it.
    const freed = this.reservations.release(n) !== null || this.resuming.delete(n);
    const q = this.book.queues.get(n.queue);
    if (q === undefined) return;
    q.removePending(n);
    if (freed) this.book.bump(q);
    if (q.model !== null) this.book.ready.add(q);
    else if (q.forgettable) this.book.queues.delete(q.name);
  }

  /** `n` now holds quota in `q`. */
  private hold(q: QueueState, n: WorkloadNode, admittedAt: number, borrowed: Amounts): void {
    applyUsage(q, n.req, 1);
    const lane = q.lane(n.project);
    addTo(lane.usage, n.req, 1);
    lane.admitted++;
    lane.served = q.round;
    q.updateShare(lane);
    const rec = markAdmitted(n, q, admittedAt, ++this.seq, borrowed);
    q.admitted.set(n.id, rec);
    q.activePriorities.set(n.priority, (q.activePriorities.get(n.priority) ?? 0) + 1);
    const newest = q.newestAdmitted.get(n.priority);
    if (newest === undefined || compareKeys(n, newest) > 0) q.newestAdmitted.set(n.priority, n);
    this.version++;
    this.admitted.set(n.id, rec);
  }

  private unhold(rec: AdmittedNode): void {
    const q = rec.holder;
    this.deactivate(rec);
    applyUsage(q, rec.req, -1);
    q.round++;
    const lane = q.lane(rec.project);
    addTo(lane.usage, rec.req, -1);
    lane.admitted--;
    q.updateShare(lane);
    q.dropLaneIfEmpty(lane);
    q.admitted.delete(rec.id);
    this.admitted.delete(rec.id);
    this.version++;
    this.victimDone(rec);
    if (q.forgettable) this.book.queues.delete(q.name);
  }

  /** `rec` no longer counts as a possible victim (it is being evicted or gone). */
  private deactivate(rec: AdmittedNode): void {
    if (rec.evicting !== null) return;
    const p = rec.priority;
    const left = (rec.holder.activePriorities.get(p) ?? 0) - 1;
    if (left > 0) rec.holder.activePriorities.set(p, left);
    else {
      rec.holder.activePriorities.delete(p);
      rec.holder.newestAdmitted.delete(p);
    }
    this.version++;
  }

  /**
   * A victim stopped (requeued or released). Once all of its preemptor's victims have, the
   * preemptor's reservation is dropped and the next pass tries it first (see `resume`): nothing is
   * admitted between now and then, so the room stays its own.
   */
  private victimDone(rec: AdmittedNode): void {
    if (rec.preemptor === null) return;
    const p = this.pending.get(rec.preemptor);
    if (p === undefined || p.waitingFor === null || !p.waitingFor.delete(rec.id)) return;
    if (p.waitingFor.size > 0) return;
    p.waitingFor = null;
    this.reservations.release(p);
    this.resuming.add(p);
    const pq = this.book.queues.get(p.queue);
    if (pq === undefined) return;
    if (pq.preemptor === p) pq.preemptor = null;
    if (pq.model !== null) this.book.ready.add(pq);
  }
}
