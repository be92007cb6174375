/**
 * A reference conservative backfilling scheduler (Mu'alem and Feitelson 2001), with at most
 * `reservations` reservations as Slurm's `bf_max_job_test`, written apart from berth's scheduler
 * (src/scheduler/conservative.ts) and in the plainest form: the whole plan made again at every
 * event from lists of intervals. What test/simulate/swf.test.ts holds berth's Backfill to with
 * more than one reservation.
 *
 * At each instant (job ends first, then submissions): the running jobs are expected to end by their
 * estimates (a job past its estimate a second later; one without, never). Then the waiting jobs in
 * submission order: each goes at the earliest instant it fits for its whole estimate among those
 * already planned; one that fits now starts, one that fits later is planned there (a reservation)
 * until there are `reservations` of them; after that, a job fits now or waits, unplanned.
 */
import type { EasyJob } from './easy.js';

interface Held {
  from: number;
  to: number;
  procs: number;
}

/** Processors free at `x` on a machine of `machine`, beside what `held` holds. */
const freeAt = (held: readonly Held[], machine: number, x: number): number =>
  held.reduce((f, h) => (h.from <= x && x < h.to ? f - h.procs : f), machine);

/** The earliest instant from `t` on at which `procs` fit for `d` seconds beside `held`. */
function earliest(held: readonly Held[], machine: number, t: number, procs: number, d: number): number {
  const starts = [t, ...held.map((h) => h.to).filter((x) => x > t && x < Infinity)].sort((a, b) => a - b);
  for (const s of starts) {
    const points = [s, ...held.map((h) => h.from).filter((x) => x > s && x < s + d)];
    if (points.every((x) => freeAt(held, machine, x) >= procs)) return s;
  }
  return Infinity;
}

/** Start times (s) of `jobs`, sorted by submit time, on a machine of `machine` processors. */
export function conservativeStarts(
  jobs: readonly EasyJob[],
  machine: number,
  reservations: number,
): number[] {
  const start: number[] = jobs.map(() => -1);
  let running: { end: number; expectedEnd: number; procs: number }[] = [];
  let waiting: number[] = [];
  let next = 0;
  while (next < jobs.length || running.length > 0) {
    let t = next < jobs.length ? (jobs[next] as EasyJob).submit : Infinity;
    for (const r of running) t = Math.min(t, r.end);
    running = running.filter((r) => r.end !== t);
    while (next < jobs.length && (jobs[next] as EasyJob).submit === t) waiting.push(next++);
    const held: Held[] = running.map((r) => ({
      from: t,
      to: Math.max(r.expectedEnd, t + 1),
      procs: r.procs,
    }));
    let reserved = 0;
    waiting = waiting.filter((i) => {
      const j = jobs[i] as EasyJob;
      const s = earliest(held, machine, t, j.procs, j.estimate);
      if (s === t) {
        start[i] = t;
        running.push({ end: t + j.run, expectedEnd: t + j.estimate, procs: j.procs });
        held.push({ from: t, to: t + j.estimate, procs: j.procs });
        return false;
      }
      if (reserved < reservations) {
        reserved++;
        held.push({ from: s, to: s + j.estimate, procs: j.procs });
      }
      return true;
    });
  }
  return start;
}
