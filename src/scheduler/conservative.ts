/**
 * More than one backfill reservation a pass (`backfill: { reservations: N }` on a Backfill queue):
 * Slurm's `bf_max_job_test`, conservative backfilling (Mu'alem and Feitelson 2001) once N covers
 * every job ahead. backfill.ts plans the first reservation, EASY's, exactly as with N = 1; this
 * module plans the next N − 1 on what that one leaves.
 *
 * The plan is a profile: per limited resource, the room of the queue over time, a step function.
 * It starts as the room now and grows at each admitted workload's expected end (room read through
 * `applyUsage` and `room`, as backfill.ts does, so cohorts and lending limits count exactly); each
 * workload placed in it takes its request over [start, start + planned runtime). Then the queue's
 * pending workloads after the first reservation's, in queue order: each goes at the earliest
 * instant it fits for its whole planned runtime. One placed now is expected to start in this pass
 * (it is not reserved, and the reservations after it count it: it need not pass theirs); one
 * placed later holds a reservation there. The walk ends after N reservations in all or
 * `WALK_PER_RESERVATION` × N workloads looked at.
 *
 * What each reservation lets through is a gate, as the first one's: its start, and the room left
 * at that instant once every reservation and the workloads ahead of it that start now are placed.
 * Room only grows between two reservations' starts, so a workload that fits now and, at every start
 * before its planned end, in what the gate leaves, delays none of them.
 *
 * Cost: O(E log E) for the E admitted workloads of the queue and its cohort, then per workload
 * walked O(B · R) for the B breakpoints of the profile (E + 2 walked at most) and R resources.
 */
import { applyUsage, room } from './quota.js';
import type { AdmittedNode, QueueState } from './queue-state.js';
import type { WorkloadNode } from './workload-node.js';

/** How many pending workloads the walk looks at, per reservation it may make. */
export const WALK_PER_RESERVATION = 10;

/** A gate as backfill.ts keeps it (structurally `BackfillGate`). */
export interface PlannedGate {
  start: number;
  left: number[];
  byPrediction: boolean;
}

/** A reservation after the first one: whose, and what it lets through. */
export interface LaterReservation {
  head: WorkloadNode;
  gate: PlannedGate;
}

export interface LaterPlan {
  /** The reservations after the first, in queue order. */
  more: LaterReservation[];
  /**
   * Per workload the walk placed: a reservation's own workload, -1 (it waits for its start); one
   * expected to start now, how many of `more` come before it (the ones it must not delay).
   */
  placed: Map<WorkloadNode, number>;
}

interface Point {
  t: number;
  free: number[];
}

/** The queue's room over time (see the comment at the top). */
class Profile {
  readonly pts: Point[] = [];

  constructor(
    private readonly q: QueueState,
    now: number,
    endOf: (a: AdmittedNode) => number,
  ) {
    const ending: { end: number; a: AdmittedNode }[] = [];
    for (const m of q.cohort === null ? [q] : q.cohort.members)
      for (const a of m.admitted.values()) ending.push({ end: endOf(a), a });
    ending.sort((x, y) => x.end - y.end);
    const roomNow = (): number[] => q.limits.idx.map((_, j) => room(q, j));
    this.pts.push({ t: now, free: roomNow() });
    let k = 0;
    while (k < ending.length && (ending[k] as { end: number }).end !== Infinity) {
      const t = (ending[k] as { end: number }).end;
      for (let e = ending[k]; e !== undefined && e.end === t; e = ending[++k])
        applyUsage(e.a.holder, e.a.req, -1);
      this.pts.push({ t: Math.max(t, now), free: roomNow() });
    }
    for (let i = k - 1; i >= 0; i--) {
      const e = ending[i] as { a: AdmittedNode };
      applyUsage(e.a.holder, e.a.req, 1);
    }
  }

  /** Index of the last breakpoint at or before `t`. */
  private at(t: number): number {
    let lo = 0;
    let hi = this.pts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((this.pts[mid] as Point).t <= t) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** A breakpoint at `t` (a copy of the step it falls in); its index. */
  private split(t: number): number {
    const i = this.at(t);
    const p = this.pts[i] as Point;
    if (p.t === t) return i;
    this.pts.splice(i + 1, 0, { t, free: p.free.slice() });
    return i + 1;
  }

  free(t: number): number[] {
    return (this.pts[this.at(t)] as Point).free;
  }

  /** `req` (per limited resource) is held over [from, to). */
  take(req: readonly number[], from: number, to: number): void {
    if (from === Infinity) return;
    const a = this.split(from);
    const b = to === Infinity ? this.pts.length : this.split(to);
    for (let i = a; i < b; i++) {
      const f = (this.pts[i] as Point).free;
      for (let j = 0; j < f.length; j++) f[j] = (f[j] ?? 0) - (req[j] ?? 0);
    }
  }

  /** The earliest breakpoint from which `req` fits for `ms` (Infinity: none known). */
  earliest(req: readonly number[], ms: number): number {
    const short = (p: Point): boolean => p.free.some((x, j) => (req[j] ?? 0) > 0 && (req[j] ?? 0) > x);
    let i = 0;
    outer: while (i < this.pts.length) {
      const s = (this.pts[i] as Point).t;
      // Room only drops at a breakpoint: past one where it is short, no start before it can do.
      for (let k = i; k < this.pts.length && (this.pts[k] as Point).t < s + ms; k++)
        if (short(this.pts[k] as Point)) {
          i = k + 1;
          continue outer;
        }
      return s;
    }
    return Infinity;
  }
}

/**
 * The reservations after the first (`first`, for `head`, planned by backfill.ts) in `q` at `now`,
 * up to `max` in all; `endOf` and `runOf` say how admitted and pending workloads are planned.
 * Lowers `first.left` by what the later reservations hold at its start.
 */
export function planLater(
  q: QueueState,
  head: WorkloadNode,
  first: PlannedGate,
  max: number,
  now: number,
  endOf: (a: AdmittedNode) => number,
  runOf: (n: WorkloadNode) => number,
): LaterPlan {
  const idx = q.limits.idx;
  const reqOf = (n: WorkloadNode): number[] => idx.map((i) => n.req[i] ?? 0);
  const profile = new Profile(q, now, endOf);
  profile.take(reqOf(head), first.start, first.start + runOf(head));
  const more: LaterReservation[] = [];
  const placed = new Map<WorkloadNode, number>([[head, -1]]);
  const starting: { n: WorkloadNode; end: number; count: number }[] = [];
  const held: { from: number; to: number; req: number[] }[] = [];
  for (const n of q.inOrder(WALK_PER_RESERVATION * max)) {
    if (more.length + 1 >= max) break;
    if (n === head) continue;
    const ms = runOf(n);
    const req = reqOf(n);
    const start = profile.earliest(req, ms);
    profile.take(req, start, start + ms);
    if (start === now) {
      placed.set(n, more.length);
      starting.push({ n, end: now + ms, count: more.length });
      continue;
    }
    placed.set(n, -1);
    more.push({ head: n, gate: { start, left: [], byPrediction: first.byPrediction } });
    held.push({ from: start, to: start + ms, req });
  }
  for (const [k, r] of more.entries()) {
    // What the workloads that start now after it hold then is not left: it is taken from the gate
    // when they are admitted (backfilled), like any workload behind a reservation.
    const left = profile.free(r.gate.start).slice();
    // Not placed (no start known): what it leaves is still what is left with it in, as the first's.
    if (r.gate.start === Infinity)
      for (let j = 0; j < idx.length; j++) left[j] = (left[j] ?? 0) - (held[k]?.req[j] ?? 0);
    for (const s of starting)
      if (s.count > k && s.end > r.gate.start)
        for (let j = 0; j < idx.length; j++) left[j] = (left[j] ?? 0) + (s.n.req[idx[j] ?? 0] ?? 0);
    r.gate.left = left;
  }
  for (const h of held)
    if (h.from <= first.start && first.start < h.to)
      for (let j = 0; j < idx.length; j++) first.left[j] = (first.left[j] ?? 0) - (h.req[j] ?? 0);
  return { more, placed };
}
