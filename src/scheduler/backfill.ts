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
 * that does not fit now is parked for the capacity epoch, as in BestEffortFIFO: within an epoch
 * quota is only taken, never freed. One that fits but may not go is parked for the instant only
 * (`QueueState.holdBack`): the reservation cannot move earlier within an epoch, but time moves it
 * later when a job outruns its expected end, and then more may go (before, such a job stayed
 * parked for the epoch and a later arrival went ahead of it; the property test against the
 * reference EASY found it). The queue's candidate searches skip, subtree by subtree, what the
 * reservation holds back (`QueueState.window`, lane-tree.ts), so a large backlog behind it costs
 * O(log n) a pass, not a try per job; what they skipped is looked at again at the next instant.
 * Once a workload the plan counts on may outrun its expected end (`BackfillPlan.movesAt`), the
 * queue is tried at every pass, arrival or release or not (the controller makes one a second).
 *
 * With `estimates: learned` on the queue (EASY++: Tsafrir, Etsion and Feitelson 2007), a job is
 * planned with the runtime berth's history predicts for it, where that is shorter than its timeout:
 * the timeout stays the hard limit, and a job that outruns its prediction is expected to end by its
 * timeout from then on. Three more rules keep mispredictions from starving the head, and make the
 * predictions pay (measured on KTH-SP2, docs/PERFORMANCE.md):
 * - a guard: a later job must also pass the same reservation planned with timeouts alone, moved
 *   `MISPREDICTION_SLACK_MS` later (`BackfillPlan.gates`), so a job predicted short that runs to its
 *   timeout delays the head by an hour at most;
 * - shortest predicted first: of the jobs that may go, each lane offers the one predicted shortest
 *   (lane-tree.ts `shortestEligible`; SJBF), at the priority of its first, never across projects'
 *   fair-share order;
 * - except past a job that has waited `SJBF_AGED_MS`: that one is offered in queue order, so that
 *   long jobs are not passed over for ever.
 *
 * The plan is made for a head, a capacity epoch and an instant, the first time a later workload is
 * tried: O(a log a) for the a workloads admitted in the queue and its cohort. Each try after that
 * is O(resources). Nothing here scans pending work: the head comes from the lanes (O(P)).
 */
import { planLater, type LaterReservation } from './conservative.js';
import { applyUsage, fits, room } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { WorkloadNode } from './workload-node.js';
import type { AdmittedNode } from './queue-state.js';

/** A workload past its expected end (or being stopped) is expected to end this long after now. */
export const OVERDUE_GRACE_MS = 1000;

/**
 * How long past the reservation's start as planned with timeouts a workload backfilled on its
 * prediction may, by its timeout, hold quota the reservation counts on: the most a misprediction
 * can delay the reserved workload (`estimates: learned`; docs/PERFORMANCE.md, issue #31).
 */
export const MISPREDICTION_SLACK_MS = 3600_000;

/**
 * Learned estimates back-fill the shortest predicted first (SJBF), but not past a workload that has
 * waited this long since it was created: that one goes first, in queue order. Without it the long
 * waits of KTH-SP2 grow by 12 % against EASY's (docs/PERFORMANCE.md, issue #31).
 */
export const SJBF_AGED_MS = 16 * 3600_000;

/** One condition a reservation puts on later workloads: the start it must not delay. */
export interface BackfillGate {
  /** A workload planned to end by this instant (ms) cannot delay it; Infinity: any may. */
  start: number;
  /** Per limited resource of the queue (as `limits.idx`), the room left then with the head in. */
  left: number[];
  /** Workloads are planned with their predicted runtimes here, else with their timeouts. */
  byPrediction: boolean;
}

/** The backfill reservation of a queue's head. */
export interface BackfillPlan {
  /** The workload it is for: the queue's first pending workload, which does not fit now. */
  readonly head: WorkloadNode;
  /** Capacity epoch and instant it was made in: it holds for both. */
  readonly epoch: number;
  readonly at: number;
  /** When enough quota is expected free for `head` (ms); Infinity: not from what is known. */
  readonly start: number;
  /**
   * What a later workload must pass, every one of them: the reservation as planned (with
   * predictions under learned estimates); under learned estimates also the same reservation planned
   * with timeouts alone, plus `MISPREDICTION_SLACK_MS`, so that a job predicted short that runs to
   * its timeout delays the head by an hour at most, as EASY with timeouts would not at all.
   */
  readonly gates: BackfillGate[];
  /**
   * The reservations after the first, with `backfill.reservations` above 1 (conservative.ts): a
   * workload must pass the gates of those ahead of it too.
   */
  readonly more: LaterReservation[];
  /** The workloads the plan placed, and how many of `more` each must not delay (-1: none may go). */
  readonly placed: ReadonlyMap<WorkloadNode, number>;
  /**
   * From this instant on the plan may move later: the earliest expected end of the workloads
   * admitted in the queue and its cohort. One that runs past it is expected to end later from then
   * (`expectedEnd`), and what the plan held back may go; before it, time only shrinks what may.
   * The guard of learned estimates plans with timeouts, never earlier than predictions: it adds
   * no earlier instant.
   */
  readonly movesAt: number;
}

/** How many reservations a pass of `q` keeps: 1 is EASY (`backfill.reservations`). */
export const reservationsOf = (q: QueueState): number => q.model?.backfill?.reservations ?? 1;

/** Whether `q` plans with learned estimates (EASY++) rather than timeouts alone. */
const learned = (q: QueueState): boolean => q.model?.estimates === 'learned';

/**
 * When admitted workload `a` is expected to release its quota, seen at `now`: by its prediction
 * (`byPrediction`, under learned estimates), at its predicted end; past that (or without), by its
 * timeout; past that too, within a second. A workload that outruns its prediction so moves its
 * expected end; it is never stopped by it.
 */
export function expectedEnd(a: AdmittedNode, now: number, byPrediction = learned(a.holder)): number {
  if (a.evicting !== null) return now + OVERDUE_GRACE_MS;
  if (byPrediction && a.admittedAt + a.predictedMs > now) return a.admittedAt + a.predictedMs;
  const end = a.admittedAt + a.timeoutMs;
  return end > now ? end : now + OVERDUE_GRACE_MS;
}

interface Ending {
  end: number;
  a: AdmittedNode;
}

/**
 * The reservation of `head` in `q` at `now`: releases expected ends in order until it fits; with
 * `timeoutsOnly`, as if no queue of the cohort had learned estimates (the guard of learned ones).
 */
function planGate(
  q: QueueState,
  head: WorkloadNode,
  now: number,
  timeoutsOnly: boolean,
): BackfillGate & { firstEnd: number } {
  const ending: Ending[] = [];
  for (const m of q.cohort === null ? [q] : q.cohort.members)
    for (const a of m.admitted.values())
      ending.push({ end: timeoutsOnly ? expectedEnd(a, now, false) : expectedEnd(a, now), a });
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
  return { start, left, byPrediction: !timeoutsOnly && learned(q), firstEnd: ending[0]?.end ?? Infinity };
}

/** The reservation of `head` in `q` at `now`, and what it lets through (`BackfillPlan.gates`). */
export function planReservation(q: QueueState, head: WorkloadNode, now: number): BackfillPlan {
  const { firstEnd: movesAt, ...gate } = planGate(q, head, now, false);
  const gates = [gate];
  const max = reservationsOf(q);
  const runOf = (n: WorkloadNode): number => (gate.byPrediction ? n.predictedMs : n.timeoutMs);
  const later = max > 1 ? planLater(q, head, gate, max, now, (a) => expectedEnd(a, now), runOf) : null;
  if (gate.byPrediction) {
    const guard = planGate(q, head, now, true);
    gates.push({
      start: guard.start + MISPREDICTION_SLACK_MS,
      left: guard.left,
      byPrediction: guard.byPrediction,
    });
  }
  return {
    head,
    epoch: q.epoch,
    at: now,
    start: gate.start,
    gates,
    more: later?.more ?? [],
    placed: later?.placed ?? new Map(),
    movesAt,
  };
}

/** Whether `n`, admitted at `now`, is planned to end by gate `g`'s start. */
function endsBefore(g: BackfillGate, n: WorkloadNode, now: number): boolean {
  const ms = g.byPrediction ? n.predictedMs : n.timeoutMs;
  return ms !== Infinity && ms <= g.start - now;
}

/** Whether `n` fits in what gate `g` leaves. */
function fitsLeft(q: QueueState, g: BackfillGate, n: WorkloadNode): boolean {
  const idx = q.limits.idx;
  for (let j = 0; j < idx.length; j++) if ((n.req[idx[j] ?? 0] ?? 0) > (g.left[j] ?? 0)) return false;
  return true;
}

/** Whether gate `g` lets `n` through, admitted at `now`: it ends by the start, or fits what is left. */
export const passes = (q: QueueState, g: BackfillGate, n: WorkloadNode, now: number): boolean =>
  endsBefore(g, n, now) || fitsLeft(q, g, n);

/** Whether `n`, which fits now, may be admitted at `now` in `q` without delaying reservation `p`. */
export function mayBackfill(q: QueueState, p: BackfillPlan, n: WorkloadNode, now: number): boolean {
  return p.gates.every((g) => passes(q, g, n, now)) && blockerAmong(q, p, n, now) === undefined;
}

/** The gates of the later reservations `n` must not delay: those ahead of it (conservative.ts). */
function laterGates(p: BackfillPlan, n: WorkloadNode): LaterReservation[] {
  const ahead = p.placed.get(n) ?? p.more.length;
  return p.more.slice(0, Math.max(0, ahead));
}

/**
 * The later reservation `n` would delay, admitted at `now`; null when it is one itself (it waits
 * for its start); undefined when none.
 */
export function blockerAmong(
  q: QueueState,
  p: BackfillPlan,
  n: WorkloadNode,
  now: number,
): LaterReservation | null | undefined {
  if (p.placed.get(n) === -1) return null;
  return laterGates(p, n).find((r) => !passes(q, r.gate, n, now));
}

/** `n` was admitted at `now` under reservation `p`: what it holds past a start is no longer left. */
export function backfilled(q: QueueState, p: BackfillPlan, n: WorkloadNode, now: number): void {
  const idx = q.limits.idx;
  for (const g of [...p.gates, ...laterGates(p, n).map((r) => r.gate)]) {
    if (endsBefore(g, n, now)) continue;
    for (let j = 0; j < idx.length; j++) g.left[j] = (g.left[j] ?? 0) - (n.req[idx[j] ?? 0] ?? 0);
  }
}
