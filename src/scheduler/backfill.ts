/**
 * Backfill: EASY backfilling (Lifka 1995; what Slurm's sched/backfill does with one reservation).
 *
 * A Backfill queue finds its candidates as BestEffortFIFO does (queue-state.ts); what differs is
 * which of them may go. When the queue's first pending workload in queue order (priority, fair
 * share, creation: the "head") does not fit, it holds a backfill reservation: the earliest instant
 * at which enough quota is expected free for it, and what of the queue's room is left at that
 * instant once it is admitted. Expected free: each admitted workload (of the queue, and of its
 * cohort's other queues, whose releases free the pool) is expected to end at its admission plus
 * its timeout; one already past that within a second (it is being stopped); one being evicted
 * within a second too; one without a timeout never, as far as the plan knows.
 *
 * A later workload is admitted now only if it fits now and cannot delay that start: it ends, by its
 * timeout, no later than the reservation starts, or it fits in what the reservation leaves (and
 * then takes it from there). One without a timeout may only use what the reservation leaves. One
 * that may not go is parked for the capacity epoch, as BestEffortFIFO parks one that does not fit:
 * within an epoch quota is only taken, never freed, so the reservation cannot move earlier and a
 * workload refused once stays refused until quota is freed (or a definition changes). The queue's
 * candidate searches skip, subtree by subtree, what the reservation holds back (`QueueState.window`,
 * lane-tree.ts), so a large backlog behind it costs O(log n) a pass, not a try per job; what they
 * skipped is looked at again at the next instant (time may have moved the reservation later).
 *
 * With `estimates: learned` on the queue (EASY++: Tsafrir, Etsion and Feitelson 2007), a job is
 * planned with the runtime berth's history predicts for it, where that is shorter than its timeout:
 * the timeout stays the hard limit, and a job that outruns its prediction is expected to end by its
 * timeout from then on.
 *
 * The plan is made for a head, a capacity epoch and an instant, the first time a later workload is
 * tried: O(a log a) for the a workloads admitted in the queue and its cohort. Each try after that
 * is O(resources). Nothing here scans pending work: the head comes from the lanes (O(P)).
 */
import { formatAmount } from '../domain/quantity.js';
import { applyUsage, fits, room } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { Explanation } from './types.js';
import type { WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';

/** A workload past its expected end (or being stopped) is expected to end this long after now. */
export const OVERDUE_GRACE_MS = 1000;

/** The backfill reservation of a queue's head. */
export interface BackfillPlan {
  /** The workload it is for: the queue's first pending workload, which does not fit now. */
  readonly head: WorkloadNode;
  /** Capacity epoch and instant it was made in: it holds for both. */
  readonly epoch: number;
  readonly at: number;
  /** When enough quota is expected free for `head` (ms); Infinity: not from what is known. */
  readonly start: number;
  /** Per limited resource of the queue (as `limits.idx`), the room left at `start` with `head` in. */
  readonly left: number[];
}

/** Whether `q` plans with learned estimates (EASY++) rather than timeouts alone. */
const learned = (q: QueueState): boolean => q.model?.estimates === 'learned';

/**
 * When admitted workload `a` is expected to release its quota, seen at `now`: with learned
 * estimates, at its predicted end; past that (or without), by its timeout; past that too, within a
 * second. A workload that outruns its prediction so moves its expected end; it is never stopped by it.
 */
export function expectedEnd(a: AdmittedNode, now: number): number {
  if (a.evicting !== null) return now + OVERDUE_GRACE_MS;
  if (learned(a.holder) && a.admittedAt + a.predictedMs > now) return a.admittedAt + a.predictedMs;
  const end = a.admittedAt + a.timeoutMs;
  return end > now ? end : now + OVERDUE_GRACE_MS;
}

interface Ending {
  end: number;
  a: AdmittedNode;
}

/** The reservation of `head` in `q` at `now`: releases expected ends in order until it fits. */
export function planReservation(q: QueueState, head: WorkloadNode, now: number): BackfillPlan {
  const ending: Ending[] = [];
  for (const m of q.cohort === null ? [q] : q.cohort.members)
    for (const a of m.admitted.values()) ending.push({ end: expectedEnd(a, now), a });
  ending.sort((x, y) => x.end - y.end);
  let start = now;
  let k = 0;
  while (!fits(q, head.req)) {
    const next = ending[k];
    if (next === undefined || next.end === Infinity) {
      start = Infinity;
      break;
    }
    start = next.end;
    for (let e = ending[k]; e !== undefined && e.end === start; e = ending[++k])
      applyUsage(e.a.holder, e.a.req, -1);
  }
  applyUsage(q, head.req, 1);
  const left = q.limits.idx.map((_, j) => room(q, j));
  applyUsage(q, head.req, -1);
  for (let i = k - 1; i >= 0; i--) {
    const e = ending[i] as Ending;
    applyUsage(e.a.holder, e.a.req, 1);
  }
  return { head, epoch: q.epoch, at: now, start, left };
}

/** Whether `n`, admitted at `now` in `q`, is expected to end no later than the reservation starts. */
function endsBefore(q: QueueState, p: BackfillPlan, n: WorkloadNode, now: number): boolean {
  const ms = learned(q) ? n.predictedMs : n.timeoutMs;
  return ms !== Infinity && ms <= p.start - now;
}

/** Whether `n`, which fits now, may be admitted at `now` in `q` without delaying reservation `p`. */
export function mayBackfill(q: QueueState, p: BackfillPlan, n: WorkloadNode, now: number): boolean {
  if (endsBefore(q, p, n, now)) return true;
  const idx = q.limits.idx;
  for (let j = 0; j < idx.length; j++) if ((n.req[idx[j] ?? 0] ?? 0) > (p.left[j] ?? 0)) return false;
  return true;
}

/** `n` was admitted at `now` under reservation `p`: what it holds past the start is no longer left. */
export function backfilled(q: QueueState, p: BackfillPlan, n: WorkloadNode, now: number): void {
  if (endsBefore(q, p, n, now)) return;
  const idx = q.limits.idx;
  for (let j = 0; j < idx.length; j++) p.left[j] = (p.left[j] ?? 0) - (n.req[idx[j] ?? 0] ?? 0);
}

/**
 * Why a pending workload of a Backfill queue waits, given the queue's reservation `p`: the front
 * workload says when it is reserved to start; one that fits now says whose start it would delay.
 * Anything else (it does not fit, the queue holds) is said as in any queue.
 */
export function explainBackfill(
  e: Explanation,
  q: QueueState,
  n: WorkloadNode,
  p: BackfillPlan,
): Explanation {
  if (p.start === Infinity) return e;
  const at = new Date(p.start).toISOString();
  if (p.head === n) {
    const l = q.limits;
    const needs = l.idx
      .map((i, j) => [l.names[j] ?? '', n.req[i] ?? 0] as const)
      .filter(([, x]) => x > 0)
      .map(([r, x]) => `${r} ${formatAmount(r, x)}`)
      .join(', ');
    return {
      ...e,
      reason: `reserved to start at ${at}: ${needs} of queue ${q.name}, when the jobs running are expected to end (backfill); position ${e.position}`,
    };
  }
  if (e.blockers.some((b) => b.kind !== 'ahead')) return e;
  return {
    ...e,
    reason: `waiting for job ${p.head.id}, reserved to start at ${at}: this job would still hold its quota then (backfill); position ${e.position}`,
  };
}
