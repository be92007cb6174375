/**
 * Kueue's scheduler-performance scenario run for real through a berth server (issue #7).
 *
 * A server in its own process, with a fresh data directory and a `simulated` factory (workers that
 * "run" `sleep S` for S seconds without a process, through the whole pipeline: store, controller,
 * agent protocol). This process creates the scenario's cluster queues and one project per queue,
 * submits the workloads over HTTP at their planned times (per queue, each workloads set on its own
 * timer, like Kueue's generator), waits until every queue is empty, then reads every job (and the
 * timeline of each one that was evicted) and reports as Kueue's recorder does (src/simulate/report.ts).
 * Alongside: `berth simulate` of the same scenario in this process, once as is and once with the
 * pipeline latency the real run showed, and for the baseline Kueue's published figures.
 *
 *   npm run bench kueue         bench/kueue/baseline.yaml (~1–2 min)
 *   npm run bench kueue-large   bench/kueue/large-scale.yaml
 *
 * BENCH_PROFILE=DIR writes a CPU profile of the server to DIR (see bench/cpu-profile.mjs).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { formatReport } from '../src/cli/simulate-report.js';
import { buildReport, type ScenarioReport } from '../src/simulate/report.js';
import { expandScenario, parseScenario, type ExpandedScenario } from '../src/simulate/scenario.js';
import { simulate, type SimulateOptions } from '../src/simulate/simulator.js';
import { fmt, startBenchServer, type BenchServer, type BenchStore } from './lib.js';
import { collect, type Collected } from './kueue/collect.js';
import { sideBySide, targets, type Column } from './kueue/compare.js';
import { getJson } from './kueue/http.js';
import { schedulerPassP99Ms } from './kueue/metrics.js';
import { createQueues } from './kueue/setup.js';
import { asSubmitted, submitScenario, type Submission } from './kueue/submit.js';

export const SCENARIOS = {
  kueue: new URL('./kueue/baseline.yaml', import.meta.url).pathname,
  'kueue-large': new URL('./kueue/large-scale.yaml', import.meta.url).pathname,
};

const SERVER_CONFIG = `
factories:
  sim: { kind: simulated, capacity: 100000 }
targets:
  sim: { factory: sim }
defaultTarget: sim
`;

/** Longest a run may take before it is reported as it stands. */
const DEADLINE_MS = Number(process.env.BENCH_KUEUE_DEADLINE_S ?? 1800) * 1000;
const PROGRESS_MS = 3000;

export interface KueueBenchResult {
  file: string;
  plan: ExpandedScenario;
  real: ScenarioReport;
  /** `berth simulate` as is (no pipeline latency); null if it failed (said on stderr). */
  simulated: ScenarioReport | null;
  simulateSeconds: number;
  /**
   * `berth simulate --admission-latency` with the latency the real run showed, replaying the
   * workloads at the times they were really submitted.
   */
  calibrated: ScenarioReport | null;
  pipelineLatencyMs: number;
  latencyByClass: Collected['latencyByClass'];
  lagMs: Collected['lagMs'];
  serverCpuSeconds: number;
  /** CPU of this process (the load generator) over the same time. */
  driverCpuSeconds: number;
  submitFailures: string[];
  notSucceeded: Record<string, number>;
  timedOut: boolean;
}

interface QueueView {
  pending: number;
  admitted: number;
}

/** A simulation's report; null, said on stderr, if the simulator stopped (a flapping scheduler). */
function simulateOrSay(plan: ExpandedScenario, opts?: SimulateOptions): ScenarioReport | null {
  try {
    return simulate(plan, opts).report;
  } catch (e) {
    log(`berth simulate failed: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
}

const cpuSeconds = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1e6;
const log = (msg: string) => process.stderr.write(`[kueue] ${msg}\n`);

async function queueTotals(s: BenchServer): Promise<{ pending: number; admitted: number }> {
  const queues = await getJson<QueueView[]>(s.api, s.token, '/cluster-queues');
  return queues.reduce((t, q) => ({ pending: t.pending + q.pending, admitted: t.admitted + q.admitted }), {
    pending: 0,
    admitted: 0,
  });
}

/** Waits until everything is submitted and no queue has pending or admitted work; false on deadline. */
async function settle(s: BenchServer, sub: Submission, total: number, start: number): Promise<boolean> {
  let submitted = false;
  void sub.done.then(() => (submitted = true));
  let lastProgress = Date.now();
  while (Date.now() - start < DEADLINE_MS) {
    await delay(250);
    const t = await queueTotals(s);
    if (Date.now() - lastProgress >= PROGRESS_MS) {
      lastProgress = Date.now();
      const finished = sub.jobs.size - t.pending - t.admitted;
      log(
        `${((Date.now() - start) / 1000).toFixed(0)} s: submitted ${fmt(sub.jobs.size)}/${fmt(total)}, ` +
          `pending ${fmt(t.pending)}, admitted ${fmt(t.admitted)}, finished ${fmt(finished)}`,
      );
    }
    if (submitted && t.pending === 0 && t.admitted === 0) return true;
  }
  return false;
}

export async function runKueueBench(file: string, store: BenchStore = 'sqlite'): Promise<KueueBenchResult> {
  const plan = expandScenario(parseScenario(readFileSync(file, 'utf8'), file));
  log(`${file}: ${plan.queues.length} queues, ${fmt(plan.workloads.length)} workloads`);
  // Simulated first, so that its CPU does not compete with the real run.
  const t0 = performance.now();
  const simulated = simulateOrSay(plan);
  const simulateSeconds = (performance.now() - t0) / 1000;
  log(`berth simulate: ${simulateSeconds.toFixed(2)} s`);

  const s = await startBenchServer(SERVER_CONFIG, store); // profiled with BENCH_PROFILE (lib.ts)
  try {
    await createQueues(s.api, s.token, plan);
    const cpu0 = s.cpuSeconds();
    const driverCpu0 = process.cpuUsage();
    const start = Date.now();
    const sub = submitScenario(s.api, s.token, plan, start);
    const settled = await settle(s, sub, plan.workloads.length, start);
    if (!settled) log(`not finished after ${DEADLINE_MS / 1000} s: reporting as it stands`);
    const serverCpuSeconds = s.cpuSeconds() - cpu0;
    const driverCpuSeconds = cpuSeconds(process.cpuUsage(driverCpu0));
    const decisionP99Ms = await schedulerPassP99Ms(s.api, s.token);
    log('reading jobs');
    const read0 = Date.now();
    const got = await collect(
      s.api,
      s.token,
      plan.queues.map((q) => q.name),
      sub.jobs,
      start,
    );
    log(`read in ${((Date.now() - read0) / 1000).toFixed(1)} s`);
    const real = buildReport(plan.queues, got.records, { start, admissions: got.admissions, decisionP99Ms });
    const calibrated = simulateOrSay(asSubmitted(plan, got.arrivals, start), {
      admissionLatencyMs: Math.round(got.pipelineLatencyMs),
    });
    return {
      file,
      plan,
      real,
      simulated,
      simulateSeconds,
      calibrated,
      pipelineLatencyMs: got.pipelineLatencyMs,
      latencyByClass: got.latencyByClass,
      lagMs: got.lagMs,
      serverCpuSeconds,
      driverCpuSeconds,
      submitFailures: sub.failures(),
      notSucceeded: got.notSucceeded,
      timedOut: !settled,
    };
  } finally {
    await s.stop();
  }
}

export function printKueueBench(r: KueueBenchResult, withKueue: boolean): void {
  const latency = Math.round(r.pipelineLatencyMs);
  console.log(`  ${r.file}: ${r.plan.queues.length} queues, ${fmt(r.plan.workloads.length)} workloads`);
  console.log(formatReport(r.real, r.plan.resource).replace(/^/gm, '  '));
  console.log(
    `  CPU: server ${fmt(r.serverCpuSeconds, 1)} s, this load generator ${fmt(r.driverCpuSeconds, 1)} s, over ${fmt(r.real.wallMs / 1000, 1)} s of wall time; ` +
      `pipeline latency (finished − admitted − runtime, jobs never evicted, weighted by request): ${fmt(r.pipelineLatencyMs, 1)} ms`,
  );
  console.log(
    `  generator: workloads recorded by the server ${fmt(r.lagMs.mean, 1)} ms after their planned time on average (at most ${fmt(r.lagMs.max)} ms)`,
  );
  for (const [c, l] of Object.entries(r.latencyByClass)) {
    console.log(
      `    ${c}: admitted → started ${fmt(l.admitToStartMs, 1)} ms, then ${fmt(l.restMs, 1)} ms beyond its runtime (${fmt(l.jobs)} jobs)`,
    );
  }
  if (r.submitFailures.length > 0)
    console.log(`  ${r.submitFailures.length} submissions failed, e.g. ${r.submitFailures[0]}`);
  const bad = Object.entries(r.notSucceeded);
  if (bad.length > 0)
    console.log(`  jobs that did not succeed: ${bad.map(([k, n]) => `${n} ${k}`).join(', ')}`);
  if (r.timedOut) console.log('  the run did not finish before the deadline: figures are partial');
  console.log('');
  console.log(
    sideBySide(
      { title: 'BERTH', report: r.real },
      [
        { title: 'SIMULATE', report: r.simulated },
        { title: 'CALIBRATED', report: r.calibrated },
      ].filter((c): c is Column => c.report !== null),
      withKueue,
    ).replace(/^/gm, '  '),
  );
  console.log(
    `  SIMULATE: berth simulate ${r.file.replace(/.*\/bench\//, 'bench/')} (took ${fmt(r.simulateSeconds, 2)} s); ` +
      `CALIBRATED: the same with --admission-latency ${latency} and the real run's submission times`,
  );
  if (withKueue) {
    console.log('');
    for (const line of targets(r.real)) console.log(`  ${line}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const name = (process.argv[2] ?? 'kueue') as keyof typeof SCENARIOS;
  const file = SCENARIOS[name] ?? process.argv[2];
  printKueueBench(await runKueueBench(file), name === 'kueue');
}
