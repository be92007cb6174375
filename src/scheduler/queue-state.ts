/**
 * One cluster queue's in-memory state: its definition, quota usage, admitted workloads, and its
 * pending workloads as per-project lanes under a heap of lane candidates.
 *
 * Candidates. StrictFIFO: each lane offers its first workload, the heap's top is the queue's
 * head and blocks the rest. BestEffortFIFO: each lane offers its first workload that is not parked
 * (found inadmissible in this capacity epoch) and either fits now or may be able to preempt; found
 * by one pruned treap descent. A capacity epoch ends when quota is released in the queue or its
 * cohort, or a definition changes: that is one counter bump, after which every parked workload is
 * eligible again without being touched, and each lane's candidate is searched anew (O(P · log n)
 * for P lanes, done lazily the next time the queue is looked at).
 */
import type { AdmittedRec } from './admitted.js';
import type { CohortState } from './cohort.js';
import { IndexedHeap } from './heap.js';
import { Lane, laneBefore } from './lane.js';
import { canFit, firstEligible, insert, mayPreempt, remove, touch, type Eligibility, type PendingNode } from './lane-tree.js';
import { compareKeys, type OrderKey } from './ordering.js';
import { NO_LIMITS, rooms, type Holder, type Limits } from './quota.js';
import { minInto, type Vec } from './resources.js';
import type { JobId, QueueModel } from './types.js';
import { dominantShare } from './fair-share.js';

export class QueueState implements Holder {
  model: QueueModel | null = null;
  limits: Limits = NO_LIMITS;
  cohort: CohortState | null = null;
  usage: Vec = [];

  readonly lanes = new Map<string, Lane>();
  readonly heap = new IndexedHeap<Lane>(laneBefore);
  pendingCount = 0;

  readonly admitted = new Map<JobId, AdmittedRec>();
  /** Priorities of admitted workloads that are not being evicted (count per priority). */
  readonly activePriorities = new Map<number, number>();
  /**
   * Per priority of such workloads, the latest queue-order key admitted since that priority last
   * had none: an upper bound of the newest, enough to bound LowerOrNewerEqualPriority cheaply.
   */
  readonly newestAdmitted = new Map<number, OrderKey>();

  /** Capacity epoch, from the scheduler's global counter; parked workloads carry the one they failed in. */
  epoch = 1;
  /** Epoch in which the lane candidates were last searched (BestEffortFIFO). */
  private lanesEpoch = -1;
  /** Set when the definition changed: every candidate and share must be recomputed. */
  private stale = true;
  /** A lower bound, per resource, of the requests of all pending workloads. */
  private minRequest: Vec | null = null;

  /** StrictFIFO: the head that did not fit, and in which epoch. */
  blockedHead: JobId | null = null;
  blockedEpoch = -1;
  /** A workload waiting for its preemption victims to stop: the queue admits nothing meanwhile. */
  preemptor: PendingNode | null = null;
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

  eligibility(): Eligibility {
    return {
      epoch: this.epoch,
      idx: this.limits.idx,
      room: rooms(this),
      reach: this.strict ? null : this.reachOf(this),
    };
  }

  private setCandidate(lane: Lane, n: PendingNode | null): void {
    lane.candidate = n;
    if (n === null) this.heap.remove(lane);
    else this.heap.update(lane);
  }

  private research(lane: Lane): void {
    if (this.strict) this.setCandidate(lane, lane.root === null ? null : lane.root.first);
    else this.setCandidate(lane, firstEligible(lane.root, this.eligibility()));
  }

  addPending(n: PendingNode): void {
    const lane = this.lane(n.w.project);
    lane.root = insert(lane.root, n);
    this.pendingCount++;
    if (this.minRequest === null) this.minRequest = n.req.slice();
    else minInto(this.minRequest, n.req);
    if (this.model === null || !this.fresh()) return;
    if (this.strict) return this.setCandidate(lane, lane.root.first);
    const c = lane.candidate;
    if (c !== null && compareKeys(n.w, c.w) > 0) return;
    const e = this.eligibility();
    if (mayPreempt(n.w, e) || canFit(n.req, e)) this.setCandidate(lane, n);
  }

  removePending(n: PendingNode): void {
    const lane = this.lanes.get(n.w.project);
    if (lane === undefined) return;
    lane.root = remove(lane.root, n);
    this.pendingCount--;
    if (this.pendingCount === 0) this.minRequest = null;
    if (this.preemptor === n) this.preemptor = null;
    if (lane.candidate === n) {
      if (this.model !== null && this.fresh()) this.research(lane);
      else this.setCandidate(lane, null);
    }
    this.dropLaneIfEmpty(lane);
  }

  /** BestEffortFIFO: `n` does not fit and cannot preempt; skip it until the epoch ends. */
  park(n: PendingNode): void {
    const lane = this.lanes.get(n.w.project);
    if (lane === undefined) return;
    n.parkedAt = this.epoch;
    touch(lane.root, n);
    if (lane.candidate === n) this.research(lane);
  }

  /** The workload the queue would admit next, or null if it has none to offer now. */
  head(): PendingNode | null {
    if (this.model === null || this.holds || this.preemptor !== null) return null;
    if (!this.fresh() && !this.refresh()) return null;
    const top = this.heap.peek();
    const n = top === undefined ? null : top.candidate;
    if (n === null) return null;
    if (this.strict && this.blockedEpoch === this.epoch && this.blockedHead === n.w.id) return null;
    return n;
  }

  /** Recomputes every lane's candidate; false when it can tell at once that nothing can go. */
  private refresh(): boolean {
    const lanes = [...this.lanes.values()];
    if (this.strict) {
      for (const lane of lanes) lane.candidate = lane.root === null ? null : lane.root.first;
    } else {
      const e = this.eligibility();
      // The whole queue in O(resources): when the smallest request of some resource is more than
      // there is room for and nothing may preempt, no lane needs looking at in this epoch.
      if (e.reach === null && this.minRequest !== null && !canFit(this.minRequest, e)) {
        this.heap.clear();
        return false;
      }
      let lower: Vec | null = null;
      for (const lane of lanes) {
        lane.candidate = firstEligible(lane.root, e);
        if (lane.root === null) continue;
        if (lower === null) lower = lane.root.min.slice();
        else minInto(lower, lane.root.min);
      }
      this.minRequest = lower;
      this.lanesEpoch = this.epoch;
    }
    this.stale = false;
    this.heap.rebuild(lanes.filter((lane) => lane.candidate !== null));
    return true;
  }
}
