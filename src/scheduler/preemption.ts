/**
 * Preemption per QUEUEING.md (Kueue's rules for one flavor).
 *
 * A pending workload that does not fit may preempt only when every resource it lacks is no more
 * than its queue's nominal. Candidates: its own queue's admitted workloads of lower priority
 * (LowerPriority), or also of equal priority created after it (LowerOrNewerEqualPriority); and,
 * with reclaimWithinCohort, the admitted workloads of other cohort members that borrow in a
 * resource it lacks (LowerPriority: of lower priority; Any: any). Workloads already being evicted
 * are never candidates. Selection is Kueue's `minimalPreemptions`: order the candidates (other
 * queues first, then lowest priority, then most recently admitted), remove them until the
 * workload fits, then put back, in reverse, each one (but the last) whose return still leaves
 * room. Nothing is evicted unless the result fits.
 *
 * borrowWithinCohort (LowerPriority, Kueue's): a workload that must borrow may also preempt —
 * while borrowing, and with a request up to its queue's borrowing cap rather than its nominal —
 * the other queues' borrowing workloads of priority below the threshold: its own priority, or
 * maxPriorityThreshold + 1 when that is lower. Once its queue is above nominal in a resource it
 * lacks, only such workloads are candidates from other queues; were one above the threshold
 * taken (its queue below nominal), the result must fit without borrowing.
 */
import { compareKeys, laterKey, type OrderKey } from './ordering.js';
import { applyUsage, fits, isBorrowing, ownUsage, room } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { Vec } from './resources.js';
import type { WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';

function lowestPriority(q: QueueState): number | undefined {
  let low: number | undefined;
  for (const p of q.activePriorities.keys()) if (low === undefined || p < low) low = p;
  return low;
}

/**
 * A cheap bound of who might preempt in `q`: a pending workload may have candidates only if it
 * comes before the returned key in queue order (null: nobody can). O(priorities + cohort members);
 * it lets the candidate search skip, by request size, everything that cannot preempt.
 */
export function preemptionReach(q: QueueState): OrderKey | null {
  const m = q.model;
  if (m === null) return null;
  let reach: OrderKey | null = null;
  if (m.preemption.withinClusterQueue !== 'Never') {
    const low = lowestPriority(q);
    if (low !== undefined) {
      const newest = q.newestAdmitted.get(low);
      const equal = m.preemption.withinClusterQueue === 'LowerOrNewerEqualPriority' && newest !== undefined;
      reach = laterKey(reach, equal ? newest : { priority: low, createdAt: -Infinity, id: -Infinity });
    }
  }
  // Reclaiming needs the queue below its nominal somewhere (it must end within nominal) — unless
  // it may borrow while preempting, and then only from lower priorities.
  const below = q.limits.idx.some((i, j) => (q.usage[i] ?? 0) < (q.limits.nominal[j] ?? 0));
  const borrowing = (m.preemption.borrowWithinCohort?.policy ?? 'Never') !== 'Never';
  if (m.preemption.reclaimWithinCohort !== 'Never' && q.cohort !== null && (below || borrowing)) {
    for (const other of q.cohort.members) {
      if (other === q || !isBorrowing(other, null)) continue;
      const low = lowestPriority(other);
      if (low === undefined) continue;
      const any = m.preemption.reclaimWithinCohort === 'Any' && below;
      reach = laterKey(reach, { priority: any ? -Infinity : low, createdAt: -Infinity, id: -Infinity });
    }
  }
  return reach;
}

const usesAny = (req: Vec, need: readonly number[]): boolean => need.some((i) => (req[i] ?? 0) > 0);

/**
 * With borrowWithinCohort, the priority other queues' victims must stay below (Kueue's
 * `allowBorrowingBelowPriority`); null when the queue may not borrow while preempting.
 */
function borrowThreshold(q: QueueState, priority: number): number | null {
  const b = q.model?.preemption.borrowWithinCohort;
  if (q.cohort === null || !b || b.policy === 'Never') return null;
  return b.maxPriorityThreshold !== null && b.maxPriorityThreshold < priority
    ? b.maxPriorityThreshold + 1
    : priority;
}

/** Candidate order: other queues first, then lower priority, then most recently admitted. */
function candidateOrder(q: QueueState): (a: AdmittedNode, b: AdmittedNode) => number {
  return (a, b) => {
    const ao = a.holder === q ? 1 : 0;
    const bo = b.holder === q ? 1 : 0;
    if (ao !== bo) return ao - bo;
    if (a.priority !== b.priority) return a.priority - b.priority;
    if (a.admittedAt !== b.admittedAt) return b.admittedAt - a.admittedAt;
    return b.seq - a.seq;
  };
}

/** The victims `n` needs in `q`, or null when preemption cannot make it fit. */
export function selectVictims(
  q: QueueState,
  n: WorkloadNode,
  /** Admitted workloads that are no candidates whatever their priority (a protected interactive job). */
  spared?: (rec: AdmittedNode) => boolean,
): AdmittedNode[] | null {
  const m = q.model;
  if (m === null) return null;
  const within = m.preemption.withinClusterQueue;
  const reclaim = q.cohort === null ? 'Never' : m.preemption.reclaimWithinCohort;
  if (within === 'Never' && reclaim === 'Never') return null;

  const threshold = reclaim === 'Never' ? null : borrowThreshold(q, n.priority);
  // Resources it lacks; each must be within nominal for preemption to be considered at all (within
  // its borrowing cap when it may borrow while preempting).
  const need: number[] = [];
  const l = q.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    const x = n.req[i] ?? 0;
    if (x <= 0 || x <= room(q, j)) continue;
    if (x > (threshold === null ? (l.nominal[j] ?? 0) : (l.cap[j] ?? 0))) return null;
    need.push(i);
  }
  if (need.length === 0) return null;

  const p = n.priority;
  const candidates: AdmittedNode[] = [];
  if (within !== 'Never') {
    for (const rec of q.admitted.values()) {
      if (rec.evicting !== null || rec.priority > p || spared?.(rec)) continue;
      if (rec.priority === p && !(within === 'LowerOrNewerEqualPriority' && compareKeys(rec, n) > 0))
        continue;
      if (usesAny(rec.req, need)) candidates.push(rec);
    }
  }
  if (reclaim !== 'Never' && q.cohort !== null) {
    for (const other of q.cohort.members) {
      if (other === q || !isBorrowing(other, need)) continue;
      for (const rec of other.admitted.values()) {
        if (rec.evicting !== null || spared?.(rec)) continue;
        if (reclaim === 'LowerPriority' && rec.priority >= p) continue;
        if (usesAny(rec.req, need)) candidates.push(rec);
      }
    }
  }
  if (candidates.length === 0) return null;
  candidates.sort(candidateOrder(q));

  const own = candidates.filter((c) => c.holder === q);
  if (own.length === candidates.length) return ownWithBorrowing(q, n.req, need, own);
  // Reclaiming from others only while this queue stays within its nominal.
  const underNominal = need.every((i) => {
    const j = l.idx.indexOf(i);
    return (q.usage[i] ?? 0) < (l.nominal[j] ?? 0);
  });
  if (threshold !== null) {
    // Borrowing while preempting: above nominal, only lower priorities of other queues are taken.
    const allowed = underNominal
      ? candidates
      : candidates.filter((c) => c.holder === q || c.priority < threshold);
    const targets = minimal(q, n.req, need, allowed, true, threshold);
    if (targets !== null && borrowsDespite(q, n.req, targets) && lenderWaits(q, need)) return null;
    return targets;
  }
  if (underNominal) {
    const targets = minimal(q, n.req, need, candidates, false);
    if (targets !== null) return targets;
  }
  return own.length === 0 ? null : ownWithBorrowing(q, n.req, need, own);
}

/** Victims in its own queue, borrowing what is still missing — unless a lender waits for it. */
function ownWithBorrowing(
  q: QueueState,
  req: Vec,
  need: readonly number[],
  own: AdmittedNode[],
): AdmittedNode[] | null {
  const targets = minimal(q, req, need, own, true);
  if (targets !== null && borrowsDespite(q, req, targets) && lenderWaits(q, need)) return null;
  return targets;
}

/** Whether `req` still borrows once `victims` are gone (the accounting is left as it was). */
function borrowsDespite(q: QueueState, req: Vec, victims: readonly AdmittedNode[]): boolean {
  for (const v of victims) applyUsage(v.holder, v.req, -1);
  const borrows = !fits(q, req, true);
  for (const v of victims) applyUsage(v.holder, v.req, 1);
  return borrows;
}

/**
 * Anti-flapping (berth's addition to Kueue's rules): whether another cohort member waits below
 * its nominal in a resource `need`s — with workloads pending and the right to reclaim. Quota
 * borrowed from it while preempting would be reclaimed at once, and the evicted workloads could
 * then preempt their way back the same way: the two queues would evict each other in turn
 * without end. Such a preemptor waits instead, as if that quota were not idle (it is not).
 */
function lenderWaits(q: QueueState, need: readonly number[]): boolean {
  for (const other of q.cohort?.members ?? []) {
    if (other === q || other.pendingCount === 0 || other.holds) continue;
    if ((other.model?.preemption.reclaimWithinCohort ?? 'Never') === 'Never') continue;
    const l = other.limits;
    for (let j = 0; j < l.idx.length; j++) {
      const i = l.idx[j] ?? 0;
      if (need.includes(i) && ownUsage(other, i) < (l.nominal[j] ?? 0)) return true;
    }
  }
  return false;
}

/**
 * Kueue's minimalPreemptions, simulated on the live accounting and undone before returning.
 * `borrowBelow`: borrowing stays allowed only while every victim of another queue has a priority
 * below it (borrowWithinCohort).
 */
function minimal(
  q: QueueState,
  req: Vec,
  need: readonly number[],
  candidates: AdmittedNode[],
  allowBorrowing: boolean,
  borrowBelow: number | null = null,
): AdmittedNode[] | null {
  const removed: AdmittedNode[] = [];
  let fit = false;
  for (const c of candidates) {
    // Another queue's workload is taken only while that queue still borrows.
    if (c.holder !== q && !isBorrowing(c.holder, need)) continue;
    if (c.holder !== q && borrowBelow !== null && c.priority >= borrowBelow) allowBorrowing = false;
    applyUsage(c.holder, c.req, -1);
    removed.push(c);
    if (fits(q, req, !allowBorrowing)) {
      fit = true;
      break;
    }
  }
  if (!fit) {
    for (let i = removed.length - 1; i >= 0; i--) {
      const c = removed[i] as AdmittedNode;
      applyUsage(c.holder, c.req, 1);
    }
    return null;
  }
  const keep = new Set<AdmittedNode>();
  for (let i = removed.length - 2; i >= 0; i--) {
    const c = removed[i] as AdmittedNode;
    applyUsage(c.holder, c.req, 1);
    if (fits(q, req, !allowBorrowing)) keep.add(c);
    else applyUsage(c.holder, c.req, -1);
  }
  const targets = removed.filter((c) => !keep.has(c));
  for (const c of targets) applyUsage(c.holder, c.req, 1);
  return targets;
}
