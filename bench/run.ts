/**
 * All benchmarks, one command: `npm run bench`. Prints figures; asserts nothing (targets are
 * compared in docs/PERFORMANCE.md, not enforced as timed tests).
 *
 *   (a) scheduler alone  — bench/scheduler.ts
 *   (b) API submissions  — bench/api.ts (against a bare node:http server measured in the same run)
 *   (c) end to end       — bench/e2e.ts (against a process-spawn baseline measured in the same run)
 *   (d) dashboard        — bench/dashboard.ts (jobs page of 100,000 jobs in chromium, against the bare API call)
 *   (e) pipeline         — bench/pipeline.ts (jobs per second through the whole pipeline, simulated factory)
 *
 * Only when named (minutes each): kueue, kueue-large (Kueue's scenarios through a real server),
 * stores (submissions and Kueue's baseline on SQLite and on PostgreSQL, side by side), slurm
 * (no-op jobs through the slurm factory, one Slurm job each and pilots, against plain sbatch),
 * vs-slurm (no-op jobs end to end through the local factory against one Slurm node, same slots),
 * flood (another client's submit → running while one token floods the API, with and without the
 * rate limit), arrays (one array of 100,000 tasks: time to accept it and bytes per task, beside
 * jobs submitted one by one), usage (GET /usage over the rollups of 1,000,000 allocations),
 * estimates (start-time estimates against the admissions they foretold, Kueue's baseline), million
 * (a million queued jobs in one server: memory, submissions, submit → running, restart, jobs page),
 * backfill (the KTH-SP2 trace under FCFS, BestEffortFIFO, Backfill and a reference EASY, simulated),
 * history (10 million ended jobs seeded into the store against 10,000: job lists, a job, usage, the
 * dashboard's first load, a restart, bytes per job, and the retention sweep of a million under
 * submissions; BERTH_BENCH_HISTORY_JOBS for a smaller run, BERTH_BENCH_HISTORY_STORE=postgres for
 * PostgreSQL instead of SQLite), images (jobs in OCI images from a registry on 127.0.0.1: a cached
 * image's cost to a job against a plain job, a cold pull of 200 MB against skopeo's own copy),
 * sessions (berth exec: a keystroke's round trip against a bare pipe, 100 MB against a bare TCP
 * relay, the memory of 200 idle sessions), metrics (GET /metrics with 1,000 projects over 10 queues:
 * its series and its time against a bare node:http server with the same bytes).
 */
import { printWrkFigures, runApiBench } from './api.js';
import { printArraysBench, runArraysBench } from './arrays.js';
import { printBackfillBench, runBackfillBench } from './backfill.js';
import { printDashboardBench, runDashboardBench } from './dashboard.js';
import { printFloodBench, runFloodBench } from './flood.js';
import { printHistoryBench, runHistoryBench } from './history.js';
import { printImagesBench, runImagesBench } from './images.js';
import { printSessionsBench, runSessionsBench } from './sessions.js';
import { runE2eBench } from './e2e.js';
import { printKueueBench, runKueueBench, SCENARIOS } from './kueue.js';
import { printMillionBench, runMillionBench } from './million.js';
import { fmt } from './lib.js';
import { printPipeline, runPipelineBench } from './pipeline.js';
import { runSchedulerBench } from './scheduler.js';
import { printSlurmBench, runSlurmBench } from './slurm.js';
import { printStoresBench, runStoresBench } from './stores.js';
import { printUsageBench, runUsageBench } from './usage.js';
import { printVsSlurmBench, runVsSlurmBench } from './vs-slurm.js';
import { printMetricsBench, runMetricsBench } from './metrics.js';
import { printEstimatesBench, runEstimatesBench } from './estimates.js';

const only = process.argv.slice(2);
const want = (name: string) => only.length === 0 || only.includes(name);

if (want('scheduler')) {
  console.log('== (a) scheduler (pure, in memory)');
  const figures = await runSchedulerBench();
  const width = Math.max(...Object.keys(figures).map((k) => k.length));
  for (const [k, v] of Object.entries(figures))
    console.log(`  ${k.padEnd(width)}  ${typeof v === 'number' ? fmt(v, 2) : v}`);
}
if (want('api')) {
  console.log('== (b) API: submissions over HTTP (server in its own process)');
  const r = await runApiBench();
  console.log(
    `  ${fmt(r.submissions)} submissions, ${r.concurrency} in flight: ${fmt(r.seconds, 2)} s = ${fmt(r.submissionsPerSecond)}/s`,
  );
  console.log(
    `  server CPU per submission: ${fmt(1e6 / r.submissionsPerServerCpuSecond)} µs = ${fmt(r.submissionsPerServerCpuSecond)} submissions per CPU-second (one dedicated core)`,
  );
  console.log(
    `  baseline, a bare node:http server answering the same requests: ${fmt(r.baselinePerSecond)}/s`,
  );
  console.log(`  ratio berth / baseline: ${fmt(r.submissionsPerSecond / r.baselinePerSecond, 2)}`);
  if (r.wrk) printWrkFigures(r.wrk);
}
if (want('e2e')) {
  console.log('== (c) end to end: no-op jobs through the local factory');
  const r = await runE2eBench();
  console.log(
    `  ${fmt(r.jobs)} jobs, factory capacity ${r.capacity}: ${fmt(r.seconds, 2)} s = ${fmt(r.jobsPerSecond, 1)} jobs/s`,
  );
  console.log(
    `  baseline, spawning the same no-op process directly at the same concurrency: ${fmt(r.spawnBaselinePerSecond)}/s`,
  );
  console.log(`  ratio berth / baseline: ${fmt(r.ratioToSpawn, 3)}`);
  console.log(
    `  the same with isolation: off (every job as the server's user): ${fmt(r.asServerUserPerSecond, 1)} jobs/s; a uid of its own per job costs ${fmt((1 - r.jobsPerSecond / r.asServerUserPerSecond) * 100, 1)}% of throughput; submit → running median ${fmt(r.asServerUserSubmitToRunningMedianMs, 1)} ms`,
  );
  console.log(
    `  submit → running on the idle server, ${r.latencyJobs} jobs one at a time: median ${fmt(r.submitToRunningMedianMs, 1)} ms, p90 ${fmt(r.submitToRunningP90Ms, 1)} ms (target ≤ 10 ms at the median)`,
  );
}
if (want('dashboard')) {
  console.log('== (d) dashboard: the jobs page of a project with 100,000 jobs, in chromium');
  printDashboardBench(await runDashboardBench());
}
if (want('pipeline')) {
  console.log('== (e) pipeline: jobs through admission, worker, run and cleanup (simulated factory)');
  printPipeline(await runPipelineBench());
}
// Kueue's scheduler-performance scenarios (bench/kueue.ts): minutes each, so only when named.
for (const name of ['kueue', 'kueue-large'] as const) {
  if (!only.includes(name)) continue;
  console.log(`== ${name}: Kueue's scheduler-performance scenario, run for real through a berth server`);
  printKueueBench(await runKueueBench(SCENARIOS[name]), name === 'kueue');
}
if (only.includes('stores')) {
  console.log("== stores: SQLite and PostgreSQL side by side (submissions, Kueue's baseline)");
  printStoresBench(await runStoresBench());
}
if (only.includes('slurm')) {
  console.log("== slurm: no-op jobs through berth's slurm factory and through plain sbatch, same cluster");
  printSlurmBench(await runSlurmBench());
}
if (only.includes('vs-slurm')) {
  console.log(
    '== vs-slurm: no-op jobs end to end, berth (local factory) against Slurm (one node), same slots',
  );
  printVsSlurmBench(await runVsSlurmBench());
}
if (only.includes('flood')) {
  console.log("== flood: another client's submit → running while one token floods the API");
  printFloodBench(await runFloodBench());
}
if (only.includes('arrays')) {
  console.log('== arrays: one job array of 100,000 tasks in one request');
  printArraysBench(await runArraysBench());
}
if (only.includes('estimates')) {
  console.log("== estimates: start-time estimates against the real admissions, Kueue's baseline (simulated)");
  printEstimatesBench(runEstimatesBench());
}
if (only.includes('usage')) {
  console.log('== usage: GET /usage over the hourly rollups of 1,000,000 allocations');
  printUsageBench(await runUsageBench());
}
if (only.includes('million')) {
  console.log('== million: a million queued jobs in one server (SQLite), against the empty server');
  printMillionBench(await runMillionBench());
}
if (only.includes('backfill')) {
  console.log(
    '== backfill: the KTH-SP2 trace (Parallel Workloads Archive) replayed on the scheduler, against EASY',
  );
  printBackfillBench(runBackfillBench());
}
if (only.includes('history')) {
  console.log(
    `== history: ${Number(process.env.BERTH_BENCH_HISTORY_JOBS || 10_000_000).toLocaleString('en-US')} ended jobs against 10,000 (${process.env.BERTH_BENCH_HISTORY_STORE ?? 'sqlite'}), and the retention sweep under submissions`,
  );
  printHistoryBench(await runHistoryBench());
}
if (only.includes('sessions')) {
  console.log(
    '== sessions: berth exec, a keystroke against a bare pipe, 100 MB against a bare TCP relay, memory per idle session',
  );
  printSessionsBench(await runSessionsBench());
}
if (only.includes('metrics')) {
  console.log('== metrics: GET /metrics with 1,000 projects over 10 queues, against a bare node:http server');
  printMetricsBench(await runMetricsBench());
  printMetricsBench(await runMetricsBench(true));
}
if (only.includes('images')) {
  console.log(
    '== images: jobs in OCI images, a cached image against none and a cold pull against skopeo (registry on 127.0.0.1)',
  );
  printImagesBench(await runImagesBench());
}
