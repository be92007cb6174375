/**
 * (e) Pipeline: jobs per second through admission → worker → running → finished → cleaned up,
 * with the simulated factory (no processes), so the figure is the server's own cost per job.
 *
 *   drain      N `sleep 0` jobs submitted while their queue is on Hold, then released: the
 *              pipeline alone, timed from the release until every worker is destroyed.
 *   live       N `sleep 0` jobs submitted as fast as the API takes them while they run: submission
 *              and pipeline share the server, timed from the first submission to the last cleanup.
 *   in flight  N `sleep 0.2` jobs, at most `inFlight` admitted at once (cpu quota), released
 *              together: the pipeline with thousands of jobs running.
 *
 * BENCH_JOBS=N changes N (5,000); BENCH_STORE=postgres runs it on PostgreSQL (127.0.0.1:5432). BENCH_PROFILE=DIR writes a CPU profile of the server process to
 * DIR (bench/cpu-profile.mjs; read it with `node bench/cpu-top.mjs FILE`).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { fmt, get, pool, post, startBenchServer, type BenchServer, type BenchStore } from './lib.js';

export interface PipelineRun {
  name: string;
  jobs: number;
  seconds: number;
  jobsPerSecond: number;
  /** Server CPU per job, in microseconds. */
  cpuMicrosPerJob: number;
  /** The most workers seen alive at once (a finished job's worker counts until it is destroyed). */
  peakInFlight: number;
}

const CONFIG = [
  'logLevel: warn',
  'factories:',
  '  sim: { kind: simulated, capacity: 100000 }',
  'targets:',
  '  sim: { factory: sim }',
  'defaultTarget: sim',
].join('\n');

async function patch(s: BenchServer, path: string, body: unknown): Promise<void> {
  const res = await fetch(s.api + path, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`PATCH ${path}: ${res.status} ${await res.text()}`);
}

/** Waits until the queue is empty and every worker is destroyed; returns the peak of workers in use. */
async function drained(s: BenchServer, queue: string): Promise<number> {
  let peak = 0;
  for (;;) {
    const [q, factories] = await Promise.all([
      get<{ pending: number; admitted: number }>(s.api, s.token, `/cluster-queues/${queue}`),
      get<{ inUse: number }[]>(s.api, s.token, '/factories'),
    ]);
    const inUse = factories.reduce((sum, f) => sum + f.inUse, 0);
    peak = Math.max(peak, inUse);
    if (q.pending === 0 && q.admitted === 0 && inUse === 0) return peak;
    await delay(20);
  }
}

async function makeQueue(s: BenchServer, name: string, cpu: number, held: boolean): Promise<void> {
  await post(s.api, s.token, '/cluster-queues', {
    name,
    quota: { cpu: String(cpu) },
    ...(held ? { stopPolicy: 'Hold' } : {}),
  });
  await post(s.api, s.token, '/projects', { name, clusterQueue: name });
}

const submitAll = (s: BenchServer, project: string, n: number, seconds: string) =>
  pool(n, 64, () =>
    post(s.api, s.token, `/projects/${project}/jobs`, {
      command: ['sleep', seconds],
      requests: { cpu: '1' },
    }),
  );

async function measure(
  s: BenchServer,
  name: string,
  jobs: number,
  queue: string,
  go: () => Promise<void>,
): Promise<PipelineRun> {
  const cpu0 = s.cpuSeconds();
  const t0 = performance.now();
  await go();
  const peakInFlight = await drained(s, queue);
  const seconds = (performance.now() - t0) / 1000;
  return {
    name,
    jobs,
    seconds,
    jobsPerSecond: jobs / seconds,
    cpuMicrosPerJob: ((s.cpuSeconds() - cpu0) * 1e6) / jobs,
    peakInFlight,
  };
}

/** The server, profiled when BENCH_PROFILE is set (bench/lib.ts withProfiler). */
const startServer = (): Promise<BenchServer> =>
  startBenchServer(CONFIG, (process.env.BENCH_STORE as BenchStore | undefined) ?? 'sqlite');

export async function runPipelineBench(n = 5000, inFlight = 2000): Promise<PipelineRun[]> {
  const s = await startServer();
  const runs: PipelineRun[] = [];
  try {
    // Warm up (JIT, statement cache) so the first figure is not the cold start's.
    await makeQueue(s, 'warm', 1_000_000, false);
    await submitAll(s, 'warm', 500, '0');
    await drained(s, 'warm');

    await makeQueue(s, 'drain', 1_000_000, true);
    await submitAll(s, 'drain', n, '0');
    runs.push(
      await measure(s, 'drain, sleep 0', n, 'drain', () =>
        patch(s, '/cluster-queues/drain', { stopPolicy: 'None' }),
      ),
    );

    await makeQueue(s, 'live', 1_000_000, false);
    runs.push(await measure(s, 'live, sleep 0', n, 'live', () => submitAll(s, 'live', n, '0')));

    await makeQueue(s, 'flight', inFlight, true);
    await submitAll(s, 'flight', n, '0.2');
    runs.push(
      await measure(s, `sleep 0.2, ≤ ${fmt(inFlight)} in flight`, n, 'flight', () =>
        patch(s, '/cluster-queues/flight', { stopPolicy: 'None' }),
      ),
    );
  } finally {
    await s.stop();
  }
  return runs;
}

export function printPipeline(runs: PipelineRun[]): void {
  for (const r of runs) {
    console.log(
      `  ${r.name.padEnd(30)} ${fmt(r.jobs)} jobs in ${fmt(r.seconds, 2)} s = ${fmt(r.jobsPerSecond)} jobs/s; ` +
        `server CPU ${fmt(r.cpuMicrosPerJob)} µs/job; peak workers alive ${fmt(r.peakInFlight)}`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  printPipeline(await runPipelineBench(Number(process.env.BENCH_JOBS) || undefined));
}
