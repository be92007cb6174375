/**
 * A reference EASY backfilling scheduler (Lifka 1995; as Mu'alem and Feitelson 2001 state it),
 * written independently of berth's scheduler, on purpose in the plainest form: arrays scanned at
 * every event. What bench/backfill.ts holds berth's Backfill strategy to.
 *
 * At each instant (job ends first, then submissions): start jobs in submission order while the
 * first one fits; the first that does not gets a reservation at the earliest time enough
 * processors are expected free, by the running jobs' estimates (a job past its estimate is expected
 * to end a second later); any later job that fits now starts if it is expected to end by then, or
 * if it fits in what the reservation leaves. Jobs run their real run time.
 */

export interface EasyJob {
  submit: number;
  run: number;
  procs: number;
  /** What the scheduler plans with (s); Infinity: none. */
  estimate: number;
}

interface Running {
  end: number;
  expectedEnd: number;
  procs: number;
}

/** Start times (s) of `jobs`, sorted by submit time, on a machine of `machine` processors. */
export function easyStarts(jobs: readonly EasyJob[], machine: number): number[] {
  const start: number[] = jobs.map(() => -1);
  let running: Running[] = [];
  const waiting: number[] = [];
  let free = machine;
  let next = 0;
  const begin = (i: number, t: number) => {
    const j = jobs[i] as EasyJob;
    start[i] = t;
    free -= j.procs;
    running.push({ end: t + j.run, expectedEnd: t + j.estimate, procs: j.procs });
  };
  while (next < jobs.length || running.length > 0) {
    let t = next < jobs.length ? (jobs[next] as EasyJob).submit : Infinity;
    for (const r of running) t = Math.min(t, r.end);
    for (const r of running) if (r.end === t) free += r.procs;
    running = running.filter((r) => r.end !== t);
    while (next < jobs.length && (jobs[next] as EasyJob).submit === t) waiting.push(next++);
    // The queue's head starts while it fits.
    while (waiting.length > 0 && (jobs[waiting[0] as number] as EasyJob).procs <= free)
      begin(waiting.shift() as number, t);
    if (waiting.length === 0) continue;
    // Its reservation: the shadow time, and the processors it leaves.
    const head = jobs[waiting[0] as number] as EasyJob;
    // A job without an estimate is not expected to end.
    const ends = running
      .filter((r) => r.expectedEnd < Infinity)
      .map((r) => ({ at: Math.max(r.expectedEnd, t + 1), procs: r.procs }));
    ends.sort((a, b) => a.at - b.at);
    let avail = free;
    let shadow = Infinity;
    for (let k = 0; k < ends.length && shadow === Infinity;) {
      const at = (ends[k] as { at: number }).at;
      // Every job expected to end at that instant frees its processors.
      for (let e = ends[k]; e !== undefined && e.at === at; e = ends[++k]) avail += e.procs;
      if (avail >= head.procs) shadow = at;
    }
    let extra = avail - head.procs;
    for (let k = 1; k < waiting.length; k++) {
      const i = waiting[k] as number;
      const j = jobs[i] as EasyJob;
      if (j.procs > free) continue;
      const endsBefore = j.estimate < Infinity && t + j.estimate <= shadow;
      if (!endsBefore && j.procs > extra) continue;
      if (!endsBefore) extra -= j.procs;
      begin(i, t);
      waiting.splice(k--, 1);
    }
  }
  return start;
}
