/**
 * `npm run bench -- million` (issue #18, item 4): a million queued jobs in one server, on SQLite.
 *
 * One server in its own process (local factory, capacity 2) is measured empty, then holding a
 * million queued jobs, in the same run:
 *
 * - its memory: VmRSS, and the peak VmHWM, from /proc/PID/status;
 * - submissions/s: BENCH_MILLION_SUBMISSIONS (50,000) jobs in three timed rounds, 64 requests in
 *   flight from the bench's Node client, into a second held queue (nothing runs), with the server's
 *   CPU per submission;
 * - submit → running: BENCH_MILLION_LATENCY_JOBS (100) no-op jobs of another project, one at a
 *   time, through the local factory (the job's createdAt to startedAt, both the server's clock);
 * - the dashboard's jobs page in chromium: navigation start → the first screen's rows, for the
 *   project of the million (each array one row, the page's default) and its queued tasks.
 *
 * The million (BENCH_MILLION_JOBS, a multiple of 100,000): job arrays of 100,000 tasks, `array:
 * "0-99999"`. Without a `%K` throttle every task is a job of the controller's model and of the
 * scheduler at once. They wait in a cluster queue with `stopPolicy: Hold`, whose pending jobs stay
 * in the scheduler as any queue's (only its head is never tried: scheduler/queue-state.ts
 * `head()`). Nothing is measured until `GET /cluster-queues/million` counts them all pending.
 *
 * Then the restarts on the same data directory: the server is killed (SIGKILL, a crash), started
 * again and timed from the spawn until it listens and its queue counts every job pending again;
 * then the same after a clean stop (SIGTERM), with the time the stop took.
 *
 * Targets: memory ≤ 2 GiB; submissions/s and submit → running within 20 % of the empty server's;
 * back to serving within 30 s of a restart; the jobs page's first screen under 1 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { ensureWebBuild, launchChromium, signIn } from '../test/helpers/browser.js';
import { markFirstRows, median, timed } from './dashboard.js';
import { fmt, get, pool, post, processCpuSeconds } from './lib.js';

const TASKS_PER_ARRAY = 100_000;
const CONCURRENCY = 64;
/** Submissions are timed in this many rounds of equal size, after WARM_UP unmeasured ones. */
const ROUNDS = 3;
const WARM_UP = 10_000;
/** Seconds of idleness that count as settled (V8 collects a quiet heap's garbage after ~8 s). */
const IDLE_SECONDS = 10;
const MAIN = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');

export interface Server {
  child: ChildProcess;
  url: string;
  api: string;
  token: string;
  /** Spawn → "listening on" in its output, in seconds. */
  startSeconds: number;
}

/**
 * `berth server` on SQLite in its own process, as test/helpers/server-process.ts starts it, but
 * waiting as long as the start takes (a restart with a million jobs queued may take longer than
 * that helper's 20 s) and timing it. `main`: the sources (under tsx) or the compiled dist/cli/main.js.
 */
/** The server on `dataDir`: the compiled CLI (or `main`), on `database` (SQLite in the data directory, or a PostgreSQL URL). */
export function startServer(
  dataDir: string,
  configFile: string,
  main = MAIN,
  database = 'sqlite',
): Promise<Server> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    // BENCH_SERVER_NODE_FLAGS, e.g. "--trace-gc" or "--cpu-prof --cpu-prof-dir=DIR": to see inside.
    [...(process.env.BENCH_SERVER_NODE_FLAGS ?? '').split(' ').filter(Boolean)]
      .concat(main.endsWith('.ts') ? ['--import', 'tsx', main] : [main])
      .concat(['server', '--data-dir', dataDir, '--listen', '127.0.0.1:0'])
      .concat(['--config', configFile, '--database', database, '--rate-limit', '0']),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  // BERTH_SERVER_LOG=FILE keeps what the server prints, as test/helpers/server-process.ts does.
  const log = process.env.BERTH_SERVER_LOG;
  if (log) {
    child.stdout.on('data', (d: Buffer) => appendFileSync(log, d));
    child.stderr.on('data', (d: Buffer) => appendFileSync(log, d));
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not listen within 10 minutes: ${out}`));
    }, 600_000);
    const onExit = (code: number | null) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before it listened: ${out}`));
    };
    child.once('exit', onExit);
    const keep = (d: Buffer) => {
      out += d.toString();
      const url = /listening on (http:\S+)/.exec(out)?.[1];
      if (!url) return;
      child.stdout.off('data', keep);
      child.stderr.off('data', keep);
      // Keep draining its output, or the server blocks on a full pipe.
      child.stdout.resume();
      child.stderr.resume();
      clearTimeout(timer);
      child.off('exit', onExit);
      const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
      resolve({ child, url, api: `${url}/api/v1`, token, startSeconds: (performance.now() - t0) / 1000 });
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
  });
}

/** Stops the server with `signal`; resolves with the seconds it took to exit. */
export async function stopServer(s: Server, signal: 'SIGTERM' | 'SIGKILL'): Promise<number> {
  const t0 = performance.now();
  if (s.child.exitCode !== null || s.child.signalCode !== null) return 0; // it had stopped already
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill(signal);
  await exited;
  return (performance.now() - t0) / 1000;
}

interface Memory {
  rss: number;
  peak: number;
}

/** The process's resident memory now and at its peak (VmRSS, VmHWM), in bytes. */
function memoryOf(pid: number): Memory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  return { rss: kib('VmRSS'), peak: kib('VmHWM') };
}

export const quantile = (xs: number[], q: number): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

interface JobTimes {
  state: string;
  createdAt: string;
  startedAt: string | null;
}

/** Submit → running of one no-op job of project `quick`, in ms (the server's clock). */
async function submitToRunning(s: Server): Promise<number> {
  const job = (await post(s.api, s.token, '/projects/quick/jobs', { command: ['true'] })) as { id: number };
  for (;;) {
    const j = await get<JobTimes>(s.api, s.token, `/jobs/${job.id}`);
    if (j.startedAt) return Date.parse(j.startedAt) - Date.parse(j.createdAt);
    if (['failed', 'cancelled'].includes(j.state)) throw new Error(`job ${job.id} ${j.state}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Pending jobs of cluster queue `name`, as its API counts them. */
async function pendingIn(s: Server, name: string): Promise<number> {
  return (await get<{ pending: number }>(s.api, s.token, `/cluster-queues/${name}`)).pending;
}

/** Polls until `name` counts `n` pending jobs; resolves with the seconds waited. */
async function untilPending(s: Server, name: string, n: number, timeoutMs = 600_000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const pending = await pendingIn(s, name).catch(() => -1);
    if (pending >= n) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutMs)
      throw new Error(`queue ${name}: ${pending} pending after ${timeoutMs} ms, not ${n}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A row here is a job's or an array's (the project's page shows each array as one row). */
const MARK_FIRST_ROWS = markFirstRows('table tbody a[href^="/jobs/"], table tbody a[href^="/arrays/"]');

/**
 * Navigation start → the first screen's rows are in the DOM, in ms (a fresh load of the app each
 * time); checks that the first row is the one expected (`href`, e.g. `/arrays/1561`).
 */
async function loadJobsPage(page: Page, url: string, href: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  const link = page.locator('table tbody tr').first().locator('a[href^="/"]').first();
  await page.locator(`table tbody a[href="${href}"]`).first().waitFor({ state: 'visible' });
  const first = await link.getAttribute('href');
  if (first !== href) throw new Error(`${url}: the first row links to ${first}, not ${href}`);
  return page.evaluate<number>('window.__berthRows');
}

/** The first row of the jobs page at `query`, as the page asks for it (the API answers first). */
async function firstRow(s: Server, project: string, query: string): Promise<string> {
  const jobs = await get<{ id: number; array?: unknown }[]>(
    s.api,
    s.token,
    `/projects/${project}/jobs?limit=50&${query}`,
  );
  if (!jobs[0]) throw new Error(`project ${project} has no job (${query})`);
  return `/${jobs[0].array ? 'arrays' : 'jobs'}/${jobs[0].id}`;
}

export interface PhaseFigures {
  /** Jobs queued in the server (every queue's pending jobs) when the phase began. */
  queued: number;
  /** VmRSS when the phase began; VmRSS and VmHWM (the process's peak so far) when it ended. */
  memory: { start: number; end: number; peak: number };
  /** The median of the rounds' rates; each round's. */
  submissionsPerSecond: number;
  submissionRates: number[];
  /** Server CPU per submission, µs. */
  cpuPerSubmissionUs: number;
  submitToRunningMs: { median: number; p90: number };
  /** `GET /projects/P/jobs?limit=50&collapse=true` alone (the page's API call), ms. */
  apiMs: number[];
  /** The jobs page, navigation start → first screen's rows, ms. */
  pageMs: number[];
  /** The same page filtered to queued jobs (tasks one by one, with their positions). */
  queuedPageMs: number[];
}

export interface MillionResult {
  jobs: number;
  submissions: number;
  latencyJobs: number;
  empty: PhaseFigures;
  full: PhaseFigures;
  /** Seconds to queue the million (the array POSTs), and to see them all pending. */
  queueSeconds: number;
  /** The server's memory right after, before it settled. */
  queuedMemory: Memory;
  /** How long the server took to settle (idle) before the empty phase, and before the full one. */
  settleSeconds: [number, number];
  /** Per restart: how the old server stopped, how long that took, spawn → listening, → all pending. */
  restarts: {
    signal: string;
    stopSeconds: number;
    listenSeconds: number;
    readySeconds: number;
    /** VmRSS once the million was pending again, and the new process's peak (VmHWM) by then. */
    memory: Memory;
  }[];
  /** After the last restart: submit → running and the jobs page, to see the restored model serve. */
  afterRestart: { submitToRunningMs: number; pageMs: number[]; memory: Memory };
}

/**
 * Waits until the server has been idle (under 5 % of a core) for IDLE_SECONDS in a row — at most
 * a minute — and resolves with the seconds it took. After a million jobs went in, the server's
 * heap holds the garbage of queueing them, which V8 collects once allocation quiets down; what
 * is measured then is the server holding a million jobs, not the aftermath of loading them.
 */
async function settle(s: Server): Promise<number> {
  const t0 = performance.now();
  let idle = 0;
  let cpu = processCpuSeconds(s.child.pid!);
  while (idle < IDLE_SECONDS && performance.now() - t0 < 60_000) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = processCpuSeconds(s.child.pid!);
    idle = now - cpu < 0.05 ? idle + 1 : 0;
    cpu = now;
  }
  return (performance.now() - t0) / 1000;
}

/** Every queue's pending jobs, as the API counts them. */
async function queuedJobs(s: Server): Promise<number> {
  const queues = await get<{ pending: number }[]>(s.api, s.token, '/cluster-queues');
  return queues.reduce((n, q) => n + q.pending, 0);
}

async function measurePhase(
  s: Server,
  browser: Browser,
  o: { submissions: number; latencyJobs: number; pageProject: string; runs: number },
): Promise<PhaseFigures> {
  const queued = await queuedJobs(s);
  const start = memoryOf(s.child.pid!).rss;
  // Submissions/s, into the held queue `parking` (nothing runs), after a warm-up: the empty
  // server is measured first, and must not be measured cold (its code not yet optimised).
  const body = { command: ['./task.sh', '--input', 'data/part'], requests: { cpu: '1' } };
  await pool(WARM_UP, CONCURRENCY, () => post(s.api, s.token, '/projects/flood/jobs', body));
  // In rounds, their median taken: another process on this machine can take a core for seconds.
  const rates: number[] = [];
  const cpu0 = processCpuSeconds(s.child.pid!);
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now();
    await pool(o.submissions / ROUNDS, CONCURRENCY, () => post(s.api, s.token, '/projects/flood/jobs', body));
    rates.push(o.submissions / ROUNDS / ((performance.now() - t0) / 1000));
  }
  const cpu = processCpuSeconds(s.child.pid!) - cpu0;
  // Submit → running, one job at a time, after a few unmeasured ones.
  for (let i = 0; i < 20; i++) await submitToRunning(s);
  const latencies: number[] = [];
  for (let i = 0; i < o.latencyJobs; i++) latencies.push(await submitToRunning(s));
  const page = await pageTimes(s, browser, o.pageProject, o.runs);
  const end = memoryOf(s.child.pid!);
  return {
    queued,
    memory: { start, end: end.rss, peak: end.peak },
    submissionsPerSecond: median(rates),
    submissionRates: rates,
    cpuPerSubmissionUs: (cpu / o.submissions) * 1e6,
    submitToRunningMs: { median: quantile(latencies, 0.5), p90: quantile(latencies, 0.9) },
    ...page,
  };
}

/** The project's jobs page as it first opens (arrays collapsed) and filtered to queued jobs. */
async function pageTimes(
  s: Server,
  browser: Browser,
  project: string,
  runs: number,
): Promise<{ apiMs: number[]; pageMs: number[]; queuedPageMs: number[] }> {
  const apiMs = await timed(runs * 2, 2, async () => {
    const t = performance.now();
    await get(s.api, s.token, `/projects/${project}/jobs?limit=50&collapse=true`);
    return performance.now() - t;
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    await signIn(page, s.url, s.token);
    await context.addInitScript(MARK_FIRST_ROWS);
    const url = `${s.url}/projects/${project}/jobs`;
    const first = await firstRow(s, project, 'collapse=true');
    const pageMs = await timed(runs, 1, () => loadJobsPage(page, url, first));
    const firstQueued = await firstRow(s, project, 'state=queued');
    const queuedPageMs = await timed(runs, 1, () => loadJobsPage(page, `${url}?state=queued`, firstQueued));
    return { apiMs, pageMs, queuedPageMs };
  } finally {
    await context.close();
  }
}

export async function runMillionBench(
  jobs = Number(process.env.BENCH_MILLION_JOBS) || 1_000_000,
  submissions = Number(process.env.BENCH_MILLION_SUBMISSIONS) || 50_000,
  latencyJobs = Number(process.env.BENCH_MILLION_LATENCY_JOBS) || 100,
  runs = 5,
): Promise<MillionResult> {
  if (jobs % TASKS_PER_ARRAY !== 0) throw new Error(`BENCH_MILLION_JOBS: a multiple of ${TASKS_PER_ARRAY}`);
  await ensureWebBuild();
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-million-'));
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, 'factories:\n  local: { kind: local, capacity: 2 }\n');
  const browser = await launchChromium();
  let s: Server | undefined;
  try {
    s = await startServer(dataDir, configFile);
    const setup: [string, unknown][] = [
      ['/cluster-queues', { name: 'million', quota: { jobs: 1 }, stopPolicy: 'Hold' }],
      ['/cluster-queues', { name: 'parking', quota: { jobs: 1 }, stopPolicy: 'Hold' }],
      ['/cluster-queues', { name: 'work', quota: { jobs: 100 } }],
      ['/projects', { name: 'sweep', clusterQueue: 'million' }],
      ['/projects', { name: 'flood', clusterQueue: 'parking' }],
      ['/projects', { name: 'quick', clusterQueue: 'work' }],
    ];
    for (const [path, body] of setup) await post(s.api, s.token, path, body);
    // The empty server's page: project `sweep` with one small array and a few jobs.
    await post(s.api, s.token, '/projects/sweep/jobs', { command: ['./task.sh'], array: '0-9' });
    await pool(40, 4, () => post(s!.api, s!.token, '/projects/sweep/jobs', { command: ['./task.sh'] }));
    const small = 50;
    const phase = { submissions, latencyJobs, pageProject: 'sweep', runs };
    const emptySettle = await settle(s);
    const empty = await measurePhase(s, browser, phase);

    // The million, an array of 100,000 tasks at a time.
    const t0 = performance.now();
    for (let i = 0; i < jobs / TASKS_PER_ARRAY; i++) {
      await post(s.api, s.token, '/projects/sweep/jobs', {
        command: ['./task.sh', '--input', 'data/part'],
        requests: { cpu: '1' },
        array: `0-${TASKS_PER_ARRAY - 1}`,
      });
    }
    await untilPending(s, 'million', jobs + small);
    const queueSeconds = (performance.now() - t0) / 1000;
    const queuedMemory = memoryOf(s.child.pid!);
    const fullSettle = await settle(s);
    const full = await measurePhase(s, browser, phase);

    const restarts: MillionResult['restarts'] = [];
    for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
      const stopSeconds = await stopServer(s, signal);
      s = undefined;
      const t1 = performance.now();
      s = await startServer(dataDir, configFile);
      await untilPending(s, 'million', jobs + small);
      restarts.push({
        signal,
        stopSeconds,
        listenSeconds: s.startSeconds,
        readySeconds: (performance.now() - t1) / 1000,
        memory: memoryOf(s.child.pid!),
      });
    }
    const afterRestart = {
      submitToRunningMs: median(await timed(latencyJobs, 5, () => submitToRunning(s!))),
      pageMs: (await pageTimes(s, browser, 'sweep', runs)).pageMs,
      memory: memoryOf(s.child.pid!),
    };
    return {
      jobs,
      submissions,
      latencyJobs,
      empty,
      full,
      queueSeconds,
      queuedMemory,
      settleSeconds: [emptySettle, fullSettle],
      restarts,
      afterRestart,
    };
  } finally {
    await browser.close();
    if (s) await stopServer(s, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const GiB = 1024 ** 3;
const mib = (bytes: number) => `${fmt(bytes / 1024 ** 2)} MiB`;
const ms = (xs: number[]) => `${fmt(median(xs))} ms (max ${fmt(Math.max(...xs))})`;
const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
const rates = (p: PhaseFigures) =>
  `${fmt(p.submissionsPerSecond)}/s [${p.submissionRates.map((x) => fmt(x)).join(', ')}]`;

export function printMillionBench(r: MillionResult): void {
  const { empty: e, full: f } = r;
  const big = `${fmt(r.jobs)} queued`;
  const peak = Math.max(f.memory.peak, ...r.restarts.map((x) => x.memory.peak), r.afterRestart.memory.peak);
  console.log(
    `  ${fmt(r.jobs)} jobs queued as ${fmt(r.jobs / TASKS_PER_ARRAY)} arrays of ${fmt(TASKS_PER_ARRAY)} tasks (held queue): ${fmt(r.queueSeconds, 1)} s`,
  );
  console.log(
    `  the server settled (idle ${IDLE_SECONDS} s) in ${fmt(r.settleSeconds[0], 1)} s before the empty phase, in ${fmt(r.settleSeconds[1], 1)} s after the million went in (VmRSS then ${mib(r.queuedMemory.rss)})`,
  );
  console.log(
    `  memory (VmRSS): empty server ${mib(e.memory.start)}; with ${fmt(f.queued)} jobs queued ${mib(f.memory.start)} = ${fmt((f.memory.start - e.memory.start) / (f.queued - e.queued))} bytes per queued job; ${mib(f.memory.end)} after the measurements; peak of every process of the run ${mib(peak)} — target ≤ 2 GiB: ${verdict(peak <= 2 * GiB)}`,
  );
  const subRatio = f.submissionsPerSecond / e.submissionsPerSecond;
  console.log(
    `  submissions/s (${fmt(r.submissions)} in ${ROUNDS} rounds, ${CONCURRENCY} in flight, held queue; the rounds' median): empty ${rates(e)} (${fmt(e.cpuPerSubmissionUs)} µs server CPU each); with ${big} ${rates(f)} (${fmt(f.cpuPerSubmissionUs)} µs) — ratio ${fmt(subRatio, 2)}, target ≥ 0.8: ${verdict(subRatio >= 0.8)}`,
  );
  const latRatio = f.submitToRunningMs.median / e.submitToRunningMs.median;
  console.log(
    `  submit → running (${r.latencyJobs} jobs, one at a time, local factory): empty median ${fmt(e.submitToRunningMs.median, 1)} ms (p90 ${fmt(e.submitToRunningMs.p90, 1)}); with ${big} ${fmt(f.submitToRunningMs.median, 1)} ms (p90 ${fmt(f.submitToRunningMs.p90, 1)}) — ratio ${fmt(latRatio, 2)}, target ≤ 1.2: ${verdict(latRatio <= 1.2)}`,
  );
  for (const x of r.restarts) {
    console.log(
      `  restart after ${x.signal} (the stop took ${fmt(x.stopSeconds, 2)} s): listening in ${fmt(x.listenSeconds, 2)} s, every job pending again in ${fmt(x.readySeconds, 2)} s; VmRSS then ${mib(x.memory.rss)} (peak ${mib(x.memory.peak)}) — target ≤ 30 s: ${verdict(x.readySeconds <= 30)}`,
    );
  }
  console.log(
    `  jobs page, first screen (navigation start → rows): empty ${ms(e.pageMs)}; with ${big} ${ms(f.pageMs)} (${fmt(median(f.pageMs) / median(e.pageMs), 2)}×) — target < 1 s: ${verdict(Math.max(...f.pageMs) < 1000)}`,
  );
  console.log(
    `  jobs page, ?state=queued: empty ${ms(e.queuedPageMs)}; with ${big} ${ms(f.queuedPageMs)}; the page's API call alone: empty ${ms(e.apiMs)}, with ${big} ${ms(f.apiMs)}`,
  );
  console.log(
    `  after the restart: submit → running median ${fmt(r.afterRestart.submitToRunningMs, 1)} ms; jobs page ${ms(r.afterRestart.pageMs)}; VmRSS ${mib(r.afterRestart.memory.rss)}`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printMillionBench(await runMillionBench());
