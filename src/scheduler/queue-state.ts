/**
 * One cluster queue's in-memory state: its definition, quota usage, admitted workloads, and its
 * pending workloads as per-project lanes under a heap of lane candidates.
 *
 * Candidates. StrictFIFO: each lane offers its first workload, the heap's top is the queue's
 * head and blocks the rest. BestEffortFIFO: each lane offers its first workload that is not parked
 * (found inadmissible in this capacity epoch) and either fits now or may be able to preempt; found
 * by one pruned treap descent, and only when the lane reaches the top of the heap (until then its
 * first workload stands in as a lower bound). A capacity epoch ends when quota is released in the
 * queue or its cohort, or a definition changes: that is one counter bump, after which every parked
 * workload is eligible again without being touched (O(P) for P lanes, at the next look).
 * Backfill behind a reservation with learned estimates: a lane offers its eligible workload
 * predicted shortest instead (lane-tree.ts `shortestEligible`), found from its first.
 */
import type { CohortState } from './cohort.js';
import { IndexedHeap } from './heap.js';
import { Lane, laneBefore, offeredBefore } from './lane.js';
import {
  canFit,
  countEligible,
  firstEligible,
  shortestEligible,
  insert,
  mayPreempt,
  minOf,
  offerable,
  remove,
  touch,
  type BackfillWindow,
  type Eligibility,
} from './lane-tree.js';
import { compareKeys, type OrderKey } from './ordering.js';
import { NO_LIMITS, room as roomOf, type Holder, type Limits } from './quota.js';
import { minInto, type Vec } from './resources.js';
import type { JobId, QueueModel } from './types.js';
import { dominantShare, mergedOrder } from './fair-share.js';
import type { Admitted, WorkloadNode } from './workload-node.js';

/** A workload that holds quota of a queue. */
export type AdmittedNode = Admitted<QueueState>;

export class QueueState implements Holder {
  model: QueueModel | null = null;
  limits: Limits = NO_LIMITS;
  cohort: CohortState<QueueState> | null = null;
  usage: Vec = [];
  reserved: Vec = [];

  readonly lanes = new Map<string, Lane>();
  readonly heap = new IndexedHeap<Lane>(laneBefore);
  pendingCount = 0;

  readonly admitted = new Map<JobId, AdmittedNode>();
  /** Priorities of admitted workloads that are not being evicted (count per priority). */
  readonly activePriorities = new Map<number, number>();
  /**
   * Per priority of such workloads, the latest queue-order key admitted since that priority last
   * had none: an upper bound of the newest, enough to bound LowerOrNewerEqualPriority cheaply.
   */
  readonly newestAdmitted = new Map<number, OrderKey>();

  /** Capacity epoch, from the scheduler's global counter; parked workloads carry the one they failed in. */
  epoch = 1;
  /**
   * Admission round: advances whenever quota held in this queue is released (a workload ended or
   * was requeued). A lane records the round of its latest admission (`Lane.served`), so at equal
   * share the project served in an earlier round goes first. Admissions within one round do not
   * advance it: until the next release, shares alone separate the projects served, and ties among
   * them fall to creation time. That is what keeps positions exact and O(log n): see fair-share.ts.
   */
  round = 1;
  /** Epoch in which every lane last offered its first workload again (BestEffortFIFO). */
  private lanesEpoch = -1;
  /** Set when the definition changed: every candidate and share must be recomputed. */
  private stale = true;
  /** A lower bound, per resource, of the requests of all pending workloads. */
  private minRequest: Vec | null = null;

  /** StrictFIFO: the head that did not fit, and in which epoch. */
  blockedHead: JobId | null = null;
  blockedEpoch = -1;
  /**
   * A workload waiting for its preemption victims to stop: the queue admits nothing meanwhile, and
   * the preemptor's request is reserved in `usage` (see Scheduler.reserve).
   */
  preemptor: WorkloadNode | null = null;
  private readonly elig: Eligibility & { room: number[] } = {
    epoch: 0,
    idx: [],
    room: [],
    reach: null,
    window: null,
  };
  /**
   * Backfill: what the reservation made in capacity epoch `epoch` lets through (scheduler.ts sets
   * it); candidate searches skip what it holds back. Ignored once the epoch has ended.
   */
  window: (BackfillWindow & { epoch: number }) | null = null;
  /**
   * Backfill: the window of the last pass that planned a reservation, kept when a new instant
   * closes `window` (backfill-plans.ts) until a pass plans again. Only the metrics' count reads it
   * (`inadmissible`): a workload the reservation held back stays held back until a pass tries it
   * again, which happens only once the reservation may have moved or something else changed.
   */
  lastWindow: (BackfillWindow & { epoch: number }) | null = null;
  /**
   * Backfill: workloads that fit but were held back by the reservation, parked for the instant
   * only. Unlike one that does not fit (room only shrinks within an epoch), one held back may pass
   * at a later instant of the same epoch: time moves the reservation later when a job outruns its
   * expected end. `releaseHeldBack` unparks them when the instant changes.
   */
  private readonly heldBack = new Set<WorkloadNode>();

  /** HoldAndDrain: admitted workloads still to be sent a drain decision. */
  drain: JobId[] = [];
  drainNext = 0;

  constructor(
    readonly name: string,
    private readonly weightOf: (project: string) => number,
    private readonly reachOf: (q: QueueState) => OrderKey | null,
  ) {}

  get strict(): boolean {
    return this.model?.queueingStrategy === 'StrictFIFO';
  }

  /** Backfill: candidates are found as in BestEffortFIFO; a reservation decides which may go (backfill.ts). */
  get backfill(): boolean {
    return this.model?.queueingStrategy === 'Backfill';
  }

  /**
   * The first pending workload in queue order, parked or not: the one a Backfill reservation is
   * for. O(P) for P lanes.
   */
  firstPending(): WorkloadNode | null {
    let best: Lane | null = null;
    let first: WorkloadNode | null = null;
    for (const lane of this.lanes.values()) {
      const n = lane.root === null ? null : lane.root.first;
      if (n === null) continue;
      if (best === null || first === null || offeredBefore(lane, n, best, first)) {
        best = lane;
        first = n;
      }
    }
    return first;
  }

  /** The first `limit` pending workloads in queue order (as `berth queue pending` lists them). */
  inOrder(limit: number): WorkloadNode[] {
    return mergedOrder([...this.lanes.values()], this.limits, this.weightOf, this.round, 0, limit);
  }

  /**
   * How many pending workloads cannot be admitted until quota is released or time moves a
   * reservation (the metrics' `inadmissible`): in StrictFIFO every one while its head is blocked in
   * this epoch (nothing passes the head); otherwise those a candidate search skips — parked in this
   * epoch (tried, or held back by a Backfill reservation) or neither fitting the room left nor able
   * to preempt. O(k log n) for the k that could go now, which the next pass admits.
   */
  inadmissible(): number {
    if (this.pendingCount === 0 || this.model === null) return 0;
    if (this.strict)
      return this.blockedEpoch === this.epoch && this.firstPending()?.id === this.blockedHead
        ? this.pendingCount
        : 0;
    const e = this.eligibility();
    const last = this.lastWindow;
    // Between passes a new instant has closed the window, yet what it held back is not tried
    // again until the reservation may have moved: it is counted as the last window left it.
    if (e.window === null && this.backfill && last !== null && last.epoch === this.epoch)
      if (this.firstPending() === last.head) e.window = last;
    let eligible = 0;
    for (const lane of this.lanes.values()) eligible += countEligible(lane.root, e);
    return this.pendingCount - eligible;
  }

  get holds(): boolean {
    return this.model !== null && this.model.stopPolicy !== 'None';
  }

  /** Nothing left to remember: no definition, nothing pending, nothing admitted. */
  get forgettable(): boolean {
    return this.model === null && this.pendingCount === 0 && this.admitted.size === 0;
  }

  lane(project: string): Lane {
    let lane = this.lanes.get(project);
    if (lane === undefined) {
      lane = new Lane(project);
      this.lanes.set(project, lane);
    }
    return lane;
  }

  dropLaneIfEmpty(lane: Lane): void {
    if (!lane.empty) return;
    this.heap.remove(lane);
    this.lanes.delete(lane.project);
  }

  /** After a definition change: recompute shares and candidates at the next look. */
  invalidate(): void {
    this.stale = true;
    for (const lane of this.lanes.values()) this.updateShare(lane);
  }

  updateShare(lane: Lane): void {
    lane.share = dominantShare(this.limits, lane.usage, this.weightOf(lane.project));
    if (this.heap.has(lane)) this.heap.update(lane);
  }

  private fresh(): boolean {
    return !this.stale && (this.strict || this.lanesEpoch === this.epoch);
  }

  /** Whether lanes offer their shortest predicted workload now (learned estimates, lane-tree.ts). */
  private offersShortest(): boolean {
    const w = this.window;
    return w !== null && w.epoch === this.epoch && this.backfill && w.shortestFirst;
  }

  /** What a candidate may take now (one reused object: searches do not nest). */
  eligibility(): Eligibility {
    const e = this.elig;
    e.epoch = this.epoch;
    e.idx = this.limits.idx;
    const room = e.room;
    room.length = e.idx.length;
    for (let j = 0; j < room.length; j++) room[j] = roomOf(this, j);
    e.reach = this.strict ? null : this.reachOf(this);
    const w = this.window;
    e.window = w !== null && w.epoch === this.epoch && this.backfill ? w : null;
    return e;
  }

  /** `n` is the lane's candidate (exact) or a lower bound of it in queue order (not exact). */
  private setCandidate(lane: Lane, n: WorkloadNode | null, exact: boolean): void {
    lane.candidate = n;
    lane.exact = exact || this.strict;
    if (n === null) this.heap.remove(lane);
    else this.heap.update(lane);
  }

  /** The lane's first workload: its candidate in StrictFIFO, a lower bound of it otherwise. */
  private resetCandidate(lane: Lane): void {
    this.setCandidate(lane, lane.root === null ? null : lane.root.first, false);
  }

  /** Replaces a lower bound by the lane's actual candidate: usually its first node, else one descent. */
  private exactify(lane: Lane): void {
    const e = this.eligibility();
    const first = lane.root === null ? null : lane.root.first;
    const eligible = first !== null && first.parkedAt < e.epoch && offerable(first, e);
    const n = eligible ? first : firstEligible(lane.root, e);
    const sjbf = n !== null && e.window !== null && e.window.shortestFirst;
    this.setCandidate(lane, sjbf ? shortestEligible(lane.root, e, n) : n, true);
  }

  addPending(n: WorkloadNode): void {
    const lane = this.lane(n.project);
    lane.root = insert(lane.root, n);
    this.pendingCount++;
    if (this.minRequest === null) this.minRequest = n.req.slice();
    else minInto(this.minRequest, n.req);
    if (this.model === null || !this.fresh()) return;
    const c = lane.candidate;
    // Whatever the lane offered, a workload ahead of it is a valid lower bound; one predicted
    // shorter may be the lane's candidate instead when it offers the shortest (shortestEligible).
    if (c === null || compareKeys(n, c) < 0) this.setCandidate(lane, n, false);
    else if (this.offersShortest() && n.predictedMs < c.predictedMs) this.setCandidate(lane, c, false);
  }

  removePending(n: WorkloadNode): void {
    this.heldBack.delete(n);
    const lane = this.lanes.get(n.project);
    if (lane === undefined) return;
    lane.root = remove(lane.root, n);
    this.pendingCount--;
    if (this.pendingCount === 0) this.minRequest = null;
    if (this.preemptor === n) this.preemptor = null;
    if (lane.candidate === n) {
      if (this.model !== null && this.fresh()) this.resetCandidate(lane);
      else this.setCandidate(lane, null, false);
    }
    this.dropLaneIfEmpty(lane);
  }

  /**
   * BestEffortFIFO: `n` does not fit and cannot preempt; skip it until the epoch ends. Room only
   * shrinks within an epoch, so a search by size skips it anyway; only a workload the search would
   * offer regardless of size (one that may preempt) needs marking, which costs a path update.
   */
  park(n: WorkloadNode): void {
    const lane = this.lanes.get(n.project);
    if (lane === undefined) return;
    const e = this.eligibility();
    if (mayPreempt(n, e) || canFit(n.req, e)) {
      n.parkedAt = this.epoch;
      touch(lane.root, n);
    }
    if (lane.candidate === n) this.exactify(lane);
  }

  /** Backfill: `n` fits but the reservation holds it back at this instant (see `heldBack`). */
  holdBack(n: WorkloadNode): void {
    this.park(n);
    if (n.parkedAt === this.epoch) this.heldBack.add(n);
  }

  /**
   * A new instant: what the reservation held back is eligible again (O(log n) each, as many as
   * were tried and held back at the last instant); the caller invalidates the candidates.
   */
  releaseHeldBack(): void {
    for (const n of this.heldBack) {
      // One parked in an earlier epoch is eligible already.
      if (n.parkedAt !== this.epoch) continue;
      n.parkedAt = 0;
      const lane = this.lanes.get(n.project);
      if (lane !== undefined) touch(lane.root, n);
    }
    this.heldBack.clear();
  }

  /**
   * After a failed try: when even the smallest pending request no longer fits and nobody may
   * preempt, stop offering candidates for the rest of the epoch in O(resources), instead of
   * letting every lane's candidate fail in turn.
   */
  settleIfFull(): void {
    if (this.strict || this.minRequest === null) return;
    const e = this.eligibility();
    if (e.reach !== null || canFit(this.minRequest, e)) return;
    this.heap.clear();
    this.lanesEpoch = -1;
  }

  /** The workload the queue would admit next, or null if it has none to offer now. */
  head(): WorkloadNode | null {
    if (this.model === null || this.holds || this.preemptor !== null) return null;
    if (!this.fresh() && !this.refresh()) return null;
    // Lanes keyed by a lower bound are made exact only when they reach the top (as in A*): the
    // top is then the true next workload, and most lanes never need a descent.
    for (;;) {
      const top = this.heap.peek();
      if (top === undefined) return null;
      if (!top.exact) {
        this.exactify(top);
        continue;
      }
      const n = top.candidate;
      if (n === null) return null;
      if (this.strict && this.blockedEpoch === this.epoch && this.blockedHead === n.id) return null;
      return n;
    }
  }

  /**
   * New epoch or definition: every lane offers its first workload again, as a lower bound, in
   * O(P) for P lanes; false when it can tell at once (O(resources)) that nothing can go.
   */
  private refresh(): boolean {
    if (!this.strict) {
      const e = this.eligibility();
      if (e.reach === null && this.minRequest !== null && !canFit(this.minRequest, e)) {
        this.heap.clear();
        return false;
      }
      this.lanesEpoch = this.epoch;
    }
    this.stale = false;
    const idx = this.limits.idx;
    // Exact again: per limited resource, the smallest request over all lanes (0 elsewhere).
    const lower: Vec = new Array<number>(idx.length === 0 ? 0 : Math.max(...idx) + 1).fill(0);
    idx.forEach((i) => (lower[i] = Infinity));
    const offered: Lane[] = [];
    for (const lane of this.lanes.values()) {
      const root = lane.root;
      lane.candidate = root === null ? null : root.first;
      lane.exact = this.strict;
      if (root === null) continue;
      offered.push(lane);
      for (const i of idx) lower[i] = Math.min(lower[i] ?? 0, minOf(root, i));
    }
    this.minRequest = offered.length === 0 ? null : lower;
    this.heap.rebuild(offered);
    return true;
  }
}
