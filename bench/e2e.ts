/**
 * (c) End to end: no-op jobs per second through the local factory (submit → admit → worker →
 * agent → process → logs → cleanup), against a baseline measured in the same run: spawning the
 * same no-op process directly with the same concurrency. The ratio says how close berth comes
 * to being limited only by process start-up.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { quantile, submitToRunning } from './flood.js';
import { fmt, get, pool, post, startBenchServer, type BenchServer } from './lib.js';

export async function spawnBaseline(n: number, concurrency: number): Promise<number> {
  const t0 = performance.now();
  await pool(
    n,
    concurrency,
    () => new Promise((resolve) => spawn('true', [], { stdio: 'ignore' }).once('exit', resolve)),
  );
  return n / ((performance.now() - t0) / 1000);
}

export interface E2eBenchResult {
  jobs: number;
  capacity: number;
  seconds: number;
  jobsPerSecond: number;
  spawnBaselinePerSecond: number;
  ratioToSpawn: number;
  /** Submit → running on the idle server afterwards (issue #18: ≤ 10 ms at the median). */
  submitToRunningMedianMs: number;
  submitToRunningP90Ms: number;
  latencyJobs: number;
  /**
   * The same jobs with `isolation: off` (every job as the server's user), in the same run: what a
   * uid of its own per job costs (docs/SECURITY.md). Equal when the server cannot switch users.
   */
  asServerUserPerSecond: number;
  /** Submit → running with `isolation: off`, median, in ms. */
  asServerUserSubmitToRunningMedianMs: number;
}

export interface BerthNoopRun {
  seconds: number;
  /** Submit → running of jobs submitted one at a time once the server is idle again, in ms. */
  latenciesMs: number[];
  /**
   * Running → ended of no-op jobs run one at a time on the idle server, in ms (the server's
   * clock): what starting and ending a job's process costs — its sandbox's set-up and tear-down
   * included — beside the command itself (`true`).
   */
  runMs: number[];
}

interface JobTimes {
  state: string;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Running → ended of one no-op job in `project`, in ms. */
async function runTime(s: BenchServer, project: string): Promise<number> {
  const job = (await post(s.api, s.token, `/projects/${project}/jobs`, { command: ['true'] })) as {
    id: number;
  };
  for (;;) {
    const j = await get<JobTimes>(s.api, s.token, `/jobs/${job.id}`);
    if (j.finishedAt) {
      if (j.state !== 'succeeded' || !j.startedAt) throw new Error(`job ${job.id} ${j.state}`);
      return Date.parse(j.finishedAt) - Date.parse(j.startedAt);
    }
    await delay(2);
  }
}

/**
 * A berth server with the local factory (`capacity` slots) runs `n` no-op jobs as fast as it
 * can; then, idle, `latencyJobs` more one at a time, each timed from submission to running.
 */
export async function noopJobsThroughBerth(
  n: number,
  capacity: number,
  latencyJobs = 0,
  factorySettings = '',
  runJobs = 0,
): Promise<BerthNoopRun> {
  const s = await startBenchServer(
    `factories:\n  local: { kind: local, capacity: ${capacity}${factorySettings} }\n`,
  );
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'bench', quota: { jobs: 1_000_000 } });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const t0 = performance.now();
    await pool(n, 32, () => post(s.api, s.token, '/projects/bench/jobs', { command: ['true'] }));
    for (;;) {
      const q = await get<{ pending: number; admitted: number }>(s.api, s.token, '/cluster-queues/bench');
      if (q.pending === 0 && q.admitted === 0) break;
      await delay(20);
    }
    const seconds = (performance.now() - t0) / 1000;
    const latenciesMs: number[] = [];
    for (let i = 0; i < latencyJobs; i++) latenciesMs.push(await submitToRunning(s, 'bench'));
    const runMs: number[] = [];
    for (let i = 0; i < runJobs; i++) runMs.push(await runTime(s, 'bench'));
    return { seconds, latenciesMs, runMs };
  } finally {
    await s.stop();
  }
}

export async function runE2eBench(n = 1000): Promise<E2eBenchResult> {
  const capacity = Number(process.env.BENCH_CAPACITY) || Math.max(2, availableParallelism());
  const baseline = await spawnBaseline(n, capacity);
  const { seconds, latenciesMs } = await noopJobsThroughBerth(n, capacity, 100);
  const jobsPerSecond = n / seconds;
  const asServerUser = await noopJobsThroughBerth(n, capacity, 100, ', isolation: off');
  return {
    jobs: n,
    capacity,
    seconds,
    jobsPerSecond,
    spawnBaselinePerSecond: baseline,
    ratioToSpawn: jobsPerSecond / baseline,
    submitToRunningMedianMs: quantile(latenciesMs, 0.5),
    submitToRunningP90Ms: quantile(latenciesMs, 0.9),
    latencyJobs: latenciesMs.length,
    asServerUserPerSecond: n / asServerUser.seconds,
    asServerUserSubmitToRunningMedianMs: quantile(asServerUser.latenciesMs, 0.5),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runE2eBench();
  console.log(
    `e2e: ${fmt(r.jobs)} no-op jobs, factory capacity ${r.capacity}: ${fmt(r.seconds, 2)} s = ${fmt(r.jobsPerSecond)} jobs/s; ` +
      `baseline spawn of the same process: ${fmt(r.spawnBaselinePerSecond)}/s; ratio ${fmt(r.ratioToSpawn, 3)}`,
  );
}
