/**
 * (b) API: job submissions per second over HTTP. The server runs in its own process (one core);
 * this process is the load generator on the other core. The queue is on Hold, so the figure is
 * the cost of submission itself (validation, auth, one transaction with its event), not of
 * running jobs.
 */
import { spawn } from 'node:child_process';
import { fmt, get, pool, post, startBenchServer, type BenchServer, type BenchStore } from './lib.js';
import { wrkPost, type WrkResult } from './wrk.js';

/** The bare node:http baseline (bench/echo-server.ts) in its own process. */
async function startEchoServer(): Promise<{ url: string; stop(): void }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('./echo-server.ts', import.meta.url).pathname],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      const m = /listening on (\S+)/.exec(d.toString());
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error('baseline server exited')));
  });
  return { url, stop: () => child.kill() };
}

const BODY = { command: ['true'], requests: { cpu: '1' } };

/** Submissions per second of the Node client against the bare node:http baseline. */
async function baseline(n: number, concurrency: number): Promise<number> {
  const echo = await startEchoServer();
  try {
    await pool(500, concurrency, () => post(echo.url, '', '/jobs', BODY));
    const t0 = performance.now();
    await pool(n, concurrency, () => post(echo.url, '', '/jobs', BODY));
    return n / ((performance.now() - t0) / 1000);
  } finally {
    echo.stop();
  }
}

/** wrk's figures: berth's submissions and the bare server's answers, same connections. */
export interface WrkFigures {
  connections: number;
  seconds: number;
  berth: WrkResult;
  baseline: WrkResult;
  /** Jobs berth holds after the run, against the 2xx answers wrk counted: durable means equal. */
  jobsStored: number;
  jobsAccepted: number;
}

export interface ApiBenchResult {
  submissions: number;
  concurrency: number;
  seconds: number;
  submissionsPerSecond: number;
  /** Submissions per CPU-second of the server process: what one dedicated core sustains. */
  submissionsPerServerCpuSecond: number;
  baselinePerSecond: number;
  /** The same with wrk as the load generator (unless BENCH_WRK_SECONDS=0). */
  wrk?: WrkFigures;
}

/** wrk against the bare server, then against berth (whose queue already holds `before` jobs). */
async function withWrk(
  s: BenchServer,
  before: number,
  connections: number,
  seconds: number,
): Promise<WrkFigures> {
  const opts = { connections, threads: 2, seconds };
  const echo = await startEchoServer();
  let bare: WrkResult;
  try {
    bare = await wrkPost(`${echo.url}/jobs`, BODY, opts);
  } finally {
    echo.stop();
  }
  const berth = await wrkPost(`${s.api}/projects/bench/jobs`, BODY, { ...opts, token: s.token });
  const queue = await get<{ pending: number }>(s.api, s.token, '/cluster-queues/bench');
  return {
    connections,
    seconds,
    berth,
    baseline: bare,
    jobsStored: queue.pending - before,
    jobsAccepted: berth.requests - berth.non2xx,
  };
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
    const body = BODY;
    await pool(500, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body)); // warm-up
    const cpu0 = s.cpuSeconds();
    const t0 = performance.now();
    await pool(n, concurrency, () => post(s.api, s.token, '/projects/bench/jobs', body));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = s.cpuSeconds() - cpu0;
    const wrkSeconds = Number(process.env.BENCH_WRK_SECONDS ?? 10);
    const wrk = wrkSeconds > 0 ? await withWrk(s, n + 500, concurrency, wrkSeconds) : undefined;
    return {
      submissions: n,
      concurrency,
      seconds,
      submissionsPerSecond: n / seconds,
      submissionsPerServerCpuSecond: n / cpu,
      baselinePerSecond,
      ...(wrk ? { wrk } : {}),
    };
  } finally {
    await s.stop();
  }
}

export function printWrkFigures(w: WrkFigures): void {
  const line = (what: string, x: WrkResult) =>
    `  wrk, ${w.connections} connections, ${w.seconds} s: ${what} ${fmt(x.requestsPerSecond)}/s (median ${fmt(x.latencyP50Ms, 2)} ms, p99 ${fmt(x.latencyP99Ms, 2)} ms)`;
  console.log(line('berth', w.berth));
  console.log(line('bare node:http', w.baseline));
  console.log(
    `  ratio berth / baseline (wrk): ${fmt(w.berth.requestsPerSecond / w.baseline.requestsPerSecond, 3)}`,
  );
  const bad = w.berth.non2xx + w.berth.socketErrors;
  console.log(
    `  durable: ${fmt(w.jobsStored)} jobs in the queue after the run for ${fmt(w.jobsAccepted)} answered 201 (the rest, at most ${w.connections}, were in flight when wrk stopped)` +
      (bad > 0 ? `; ${fmt(bad)} refused or failed (the figure is not valid)` : ''),
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await runApiBench();
  console.log(
    `api: ${fmt(r.submissions)} submissions over HTTP (${r.concurrency} in flight) in ${fmt(r.seconds, 2)} s = ${fmt(r.submissionsPerSecond)}/s; ` +
      `${fmt(r.submissionsPerServerCpuSecond)} per server CPU-second; ` +
      `bare node:http baseline ${fmt(r.baselinePerSecond)}/s; ratio ${fmt(r.submissionsPerSecond / r.baselinePerSecond, 2)}`,
  );
}
