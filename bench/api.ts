/**
 * (b) API: job submissions per second over HTTP. The server runs in its own process (one core);
 * this process is the load generator on the other core. The queue is on Hold, so the figure is
 * the cost of submission itself (validation, auth, one transaction with its event), not of
 * running jobs.
 */
import { spawn } from 'node:child_process';
import { fmt, pool, post, startBenchServer, type BenchStore } from './lib.js';

/** Submissions per second against the bare node:http baseline (bench/echo-server.ts). */
async function baseline(n: number, concurrency: number): Promise<number> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./echo-server.ts', import.meta.url).pathname],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        const m = /listening on (\S+)/.exec(d.toString());
        if (m?.[1]) resolve(m[1]);
      });
      child.once('exit', () => reject(new Error('baseline server exited')));
    });
    const body = { command: ['true'], requests: { cpu: '1' } };
    await pool(500, concurrency, () => post(url, '', '/jobs', body));
    const t0 = performance.now();
    await pool(n, concurrency, () => post(url, '', '/jobs', body));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    child.kill();
  }
}

export interface ApiBenchResult {
  submissions: number;
  concurrency: number;
  seconds: number;
  submissionsPerSecond: number;
  /** Submissions per CPU-second of the server process: what one dedicated core sustains. */
  submissionsPerServerCpuSecond: number;
  baselinePerSecond: number;
}

export async function runApiBench(
  n = 20_000,
  concurrency = 64,
  store: BenchStore = 'sqlite',
): Promise<ApiBenchResult> {
  const baselinePerSecond = await baseline(n, concurrency);
  const s = await startBenchServer('factories:\n  local: { kind: local, capacity: 1 }\n', store);
  try {
    await post(s.api, s.token, '/cluster-queues', {
      name: 'bench',
      quota: { cpu: '1000' },
      stopPolicy: 'Hold',
    });
    await post(s.api, s.token, '/projects', { name: 'bench', clusterQueue: 'bench' });
    const body = { command: ['true'], requests: { cpu: '1' } };
    await pool(500, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body)); // warm-up
    const cpu0 = s.cpuSeconds();
    const t0 = performance.now();
    await pool(n, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = s.cpuSeconds() - cpu0;
    return {
      submissions: n,
      concurrency,
      seconds,
      submissionsPerSecond: n / seconds,
      submissionsPerServerCpuSecond: n / cpu,
      baselinePerSecond,
    };
  } finally {
    await s.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runApiBench();
  console.log(
    `api: ${fmt(r.submissions)} submissions over HTTP (${r.concurrency} in flight) in ${fmt(r.seconds, 2)} s = ${fmt(r.submissionsPerSecond)}/s; ` +
      `${fmt(r.submissionsPerServerCpuSecond)} per server CPU-second; ` +
      `bare node:http baseline ${fmt(r.baselinePerSecond)}/s; ratio ${fmt(r.submissionsPerSecond / r.baselinePerSecond, 2)}`,
  );
}
