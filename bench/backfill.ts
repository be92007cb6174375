/**
 * `npm run bench -- backfill` (issue #31): the KTH-SP2 log of the Parallel Workloads Archive
 * (28,481 jobs on 100 processors, Sep 1996 – Aug 1997, with the users' requested times; carried as
 * bench/data/KTH-SP2.swf.gz) replayed through berth's scheduler with a virtual clock, one queue
 * of 100 cpu (src/simulate/swf.ts), under StrictFIFO (= FCFS), BestEffortFIFO, Backfill with the
 * requested times and Backfill with learned estimates (EASY++, guarded: src/scheduler/backfill.ts),
 * beside a reference EASY written apart from the scheduler (bench/easy.ts), and Backfill with 100
 * reservations (conservative backfilling: src/scheduler/conservative.ts). Then what a pass behind
 * a reservation costs against 10,000 and 100,000 queued jobs, SJBF's search included.
 * Per policy: average and max wait, average bounded slowdown (τ = 10 s), utilization, and the
 * seconds the replay took. Targets: Backfill within 5 % of the reference on bounded slowdown and
 * max wait; the whole trace in under 5 s; with learned estimates, bounded slowdown ≤ 0.75 × the
 * reference's, and no job waiting longer than under it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import {
  BSLD_TAU,
  parseSwf,
  replaySwf,
  swfPlan,
  swfSummary,
  type SwfPlanOptions,
  type SwfSummary,
  type SwfTrace,
} from '../src/simulate/swf.js';
import { Scheduler, type QueueModel } from '../src/scheduler/index.js';
import { easyStarts } from './easy.js';
import { fmt } from './lib.js';

export const KTH_SP2 = fileURLToPath(new URL('./data/KTH-SP2.swf.gz', import.meta.url));

export interface BackfillRow {
  policy: string;
  summary: SwfSummary;
  seconds: number;
  /** Start (s) of each job, in the trace's order of submission. */
  starts: number[];
}

export interface BackfillBench {
  procs: number;
  rows: BackfillRow[];
  scale: ScaleRow[];
}

/** A pass behind a reservation, against a large backlog (what the live scheduler must bear). */
export interface ScaleRow {
  strategy: QueueModel['queueingStrategy'];
  /** Learned estimates, the jobs queued predicted shortest last (SJBF's worst order). */
  learned: boolean;
  /** Reservations a pass keeps (`backfill.reservations`). */
  reservations: number;
  pending: number;
  releases: number;
  /** Jobs admitted by those passes. */
  admitted: number;
  ms: number;
}

/**
 * 100 one-cpu jobs run, ending one a second; a job wanting the whole queue waits behind them, and
 * behind it `pending` one-cpu jobs too long to end before it. Each release frees one cpu that every
 * one of them fits, and none may take. The time of `releases` releases, each with its pass.
 * `learned`: the queue has learned estimates, and the jobs behind are predicted short enough to go,
 * each shorter than the one before it: each release admits one, the last in queue order (SJBF).
 */
function scalePasses(
  strategy: QueueModel['queueingStrategy'],
  pending: number,
  learned = false,
  releases = 50,
  reservations = 1,
): ScaleRow {
  const s = new Scheduler();
  const cpu = (n: number) => ({ cpu: n * 1000, jobs: 1 });
  s.upsertQueue({
    name: 'q',
    cohort: null,
    nominal: { cpu: 100_000 },
    borrowingLimit: {},
    lendingLimit: {},
    queueingStrategy: strategy,
    ...(learned ? { estimates: 'learned' as const } : {}),
    ...(reservations > 1 ? { backfill: { reservations } } : {}),
    preemption: { withinClusterQueue: 'Never', reclaimWithinCohort: 'Never' },
    stopPolicy: 'None',
  });
  const base = { queue: 'q', project: 'p', priority: 0 };
  let id = 0;
  for (let i = 0; i < 100; i++)
    s.restoreAdmitted({
      ...base,
      id: ++id,
      createdAt: 0,
      requests: cpu(1),
      admittedAt: 0,
      borrowed: {},
      // Learned: they end far later, so that the jobs behind end before the reservation.
      timeoutMs: learned ? 1e7 : (i + 1) * 1000,
    });
  s.enqueue({ ...base, id: ++id, createdAt: 1, requests: cpu(100), timeoutMs: 1e6 });
  for (let i = 0; i < pending; i++)
    s.enqueue({
      ...base,
      id: ++id,
      createdAt: 2,
      requests: cpu(1),
      timeoutMs: learned ? 2e6 : 1e7,
      ...(learned ? { expectedMs: 1e6 - i } : {}),
    });
  s.schedule(0);
  const started = performance.now();
  let admitted = 0;
  for (let r = 1; r <= releases; r++) {
    s.release(r);
    admitted += s.schedule(r * 1000 - 1).length;
  }
  return { strategy, learned, reservations, pending, releases, admitted, ms: performance.now() - started };
}

const POLICIES: [string, SwfPlanOptions][] = [
  ['berth StrictFIFO (= FCFS)', { strategy: 'StrictFIFO' }],
  ['berth BestEffortFIFO', { strategy: 'BestEffortFIFO' }],
  ['berth Backfill, requested times', { strategy: 'Backfill' }],
  ['berth Backfill, learned estimates', { strategy: 'Backfill', estimates: 'learned' }],
  // Conservative backfilling: on this trace 100 reservations are every job ahead (1,000 give the
  // same starts), so each job that cannot start holds one (src/scheduler/conservative.ts).
  ['berth Backfill, conservative (100 reservations)', { strategy: 'Backfill', reservations: 100 }],
];
export const REFERENCE = 'reference EASY (bench/easy.ts)';

/** The reference EASY on the same jobs, as swfPlan gives them to the scheduler. */
function referenceEasy(trace: SwfTrace): BackfillRow {
  const started = performance.now();
  const p = swfPlan(trace);
  const jobs = p.jobs.map((j, i) => ({
    submit: j.submit,
    run: j.run,
    procs: j.procs,
    estimate: (p.plan.workloads[i]?.timeoutMs ?? Infinity) / 1000,
  }));
  const starts = easyStarts(jobs, p.procs);
  const runs = p.jobs.map((j, i) => {
    const start = starts[i] ?? NaN;
    return { id: j.id, submit: j.submit, start, end: start + j.run, procs: j.procs };
  });
  const summary = swfSummary(runs, p.procs, p.skipped);
  return {
    policy: REFERENCE,
    summary,
    seconds: (performance.now() - started) / 1000,
    starts: runs.map((r) => r.start),
  };
}

export function runBackfillBench(file = KTH_SP2): BackfillBench {
  const trace = parseSwf(gunzipSync(readFileSync(file)).toString('utf8'));
  const rows = POLICIES.map(([policy, opts]): BackfillRow => {
    const r = replaySwf(trace, opts);
    return { policy, summary: r.summary, seconds: r.elapsedMs / 1000, starts: r.runs.map((x) => x.start) };
  });
  rows.push(referenceEasy(trace));
  const scale = [10_000, 100_000].flatMap((n) => [
    scalePasses('BestEffortFIFO', n),
    scalePasses('Backfill', n),
    scalePasses('Backfill', n, true),
    scalePasses('Backfill', n, false, 50, 100),
  ]);
  return { procs: swfPlan(trace).procs, rows, scale };
}

export function printBackfillBench(b: BackfillBench): void {
  const first = b.rows[0]?.summary;
  if (first !== undefined)
    console.log(`  ${fmt(first.jobs)} jobs on ${b.procs} processors (${first.skipped} records skipped)`);
  const width = Math.max(...b.rows.map((r) => r.policy.length));
  console.log(
    `  ${'policy'.padEnd(width)}  ${'avg wait'.padStart(11)}  ${'max wait'.padStart(12)}  ${`avg bsld τ=${BSLD_TAU}s`.padStart(14)}  utilization  simulated in`,
  );
  for (const { policy, summary: s, seconds } of b.rows)
    console.log(
      `  ${policy.padEnd(width)}  ${`${fmt(s.avgWait)} s`.padStart(11)}  ${`${fmt(s.maxWait)} s`.padStart(12)}  ${fmt(s.avgBoundedSlowdown, 1).padStart(14)}  ${`${fmt(s.utilization * 100, 1)} %`.padStart(11)}  ${fmt(seconds, 2)} s`,
    );
  const backfill = b.rows.find((r) => r.policy === POLICIES[2]?.[0]);
  const learned = b.rows.find((r) => r.policy === POLICIES[3]?.[0]);
  const reference = b.rows.find((r) => r.policy === REFERENCE);
  if (backfill === undefined || learned === undefined || reference === undefined) return;
  const off = (a: number, ref: number) => `${fmt((a / ref - 1) * 100, 2)} %`;
  console.log(
    `  Backfill against the reference: bounded slowdown ${off(backfill.summary.avgBoundedSlowdown, reference.summary.avgBoundedSlowdown)}, max wait ${off(backfill.summary.maxWait, reference.summary.maxWait)} (target: within 5 %); whole trace in ${fmt(backfill.seconds, 2)} s (target < 5 s)`,
  );
  for (const r of b.scale)
    console.log(
      r.learned
        ? `  ${r.strategy}, learned estimates: ${fmt(r.pending)} one-cpu jobs that may go behind one wanting the whole queue, each predicted shorter than the one before, ${fmt(r.releases)} releases of one cpu, each with its pass (${fmt(r.admitted)} admitted, the shortest each time): ${fmt(r.ms, 1)} ms`
        : `  ${r.strategy}${r.reservations > 1 ? `, ${r.reservations} reservations` : ''}: ${fmt(r.pending)} one-cpu jobs queued behind one wanting the whole queue, ${fmt(r.releases)} releases of one cpu, each with its pass: ${fmt(r.ms, 1)} ms`,
    );
  const later = learned.starts.filter((s, i) => s > (reference.starts[i] ?? Infinity)).length;
  console.log(
    `  learned estimates against the reference: bounded slowdown ${fmt(learned.summary.avgBoundedSlowdown / reference.summary.avgBoundedSlowdown, 3)}× (target ≤ 0.75×), max wait ${fmt(learned.summary.maxWait / reference.summary.maxWait, 2)}×; ${fmt(later)} jobs wait longer than under it (target: none)`,
  );
}
