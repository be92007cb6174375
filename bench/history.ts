/**
 * `npm run bench -- history` (issue #28, item 5): an installation holding 10 million ended jobs
 * against one holding 10,000, in one run, on SQLite (or PostgreSQL, below). Each is seeded at the
 * store level (bench/history-seed.ts: every job with its events, worker, audit row, allocation and
 * rollups; a log file for the newest 10,000 jobs and for those the sweep will remove), then
 * measured with the compiled server in its own process, retention off:
 *
 * - `GET /projects/p/jobs?limit=50`, the first page and a deep one (`before` an id a tenth of the
 *   way into the history), and `GET /jobs/{id}` of an old job: medians of RUNS after a warm-up;
 * - `GET /usage?since=30d&by=project`, the call `berth usage --since 30d` makes;
 * - the dashboard's first load in chromium: navigation start → the overview's queue cards, and →
 *   the first rows of project p's jobs page (a fresh load of the app each time, signed in);
 * - a restart (SIGTERM, then spawn → listening → the jobs page's API call answered), RESTARTS times;
 * - database bytes per ended job (berth.db after the seeding, the server stopped; the logs are
 *   files beside it).
 *
 * Then, on the large one only: submissions at a steady SUBMIT_RATE into a held queue (nothing
 * runs) for QUIET_SECONDS right after a restart, their latency's p99; then the server restarted
 * with the default retention (jobs 90 days, the ledger's allocations 90 days): the jobs are spread
 * over 100 days, so its sweep at start removes the oldest tenth (1 million of 10 million) while
 * the same submissions flow; their p99 until the sweep is done, against the quiet run's.
 *
 * BERTH_BENCH_HISTORY_JOBS sets the large size (default 10,000,000) for a quick run.
 *
 * BERTH_BENCH_HISTORY_STORE=postgres runs the same on PostgreSQL (127.0.0.1:5432, or the test
 * suite's BERTH_TEST_PG_URL; a superuser, trust auth): each installation gets a new database,
 * berth_bench_history_<pid>_<n>, which its server's first start migrates and which is dropped at
 * the end, also when the bench fails. The seed (bench/history-seed-pg.ts) writes the same rows with
 * the same SQL, and the same logs as rows of `job_logs` (PostgreSQL's log store) instead of files;
 * it also vacuums and analyzes what it wrote, as autovacuum would have. What differs: the bench reads the sweep's counts with the same SQL
 * over a pg connection instead of a read-only SQLite one; database bytes are pg_database_size less
 * `job_logs` (so the logs count on neither store), which includes the few MB of an empty
 * database's catalogs.
 */
import BetterSqlite3 from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { ensureWebBuild, launchChromium, signIn } from '../test/helpers/browser.js';
import { PG_ADMIN_URL } from '../test/helpers/store.js';
import { markFirstRows, median, timed } from './dashboard.js';
import { seedHistory, seedLogs, PROJECT, type HistoryShape, type SeedFigures } from './history-seed.js';
import { seedHistoryPg, seedLogsPg } from './history-seed-pg.js';
import { fmt, post, type BenchStore } from './lib.js';
import { quantile, startServer, stopServer, type Server } from './million.js';

const SMALL = 10_000;
const DAYS = 100;
const RETENTION_DAYS = 90;
const RUNS = 15;
const PAGE_RUNS = 7;
const RESTARTS = 3;
/** Submissions per second while the sweep runs, and in the quiet run beside it. */
const SUBMIT_RATE = 100;
/**
 * The quiet run's length. Its p99 is the 60th slowest of 6,000: at 30 s (the 30th of 3,000) one
 * stall of a few hundred ms from anything else on the machine was the whole figure (238 ms once,
 * against 12–56 ms in the other runs).
 */
const QUIET_SECONDS = 60;
const BUILT_MAIN = join(import.meta.dirname, '..', 'dist', 'cli', 'main.js');
const KEEP_ALL = 'retention: { jobs: forever, audit: forever, ledger: forever }\n';
const FACTORY = 'factories:\n  local: { kind: local, capacity: 2 }\n';

export interface InstallationFigures {
  jobs: number;
  seed: SeedFigures;
  /** Logs seeded: files on SQLite, `job_logs` rows on PostgreSQL. */
  logs: number;
  logSeconds: number;
  dbBytes: number;
  /** Each a list of ms (or s for the restarts), one per run. */
  firstPageMs: number[];
  deepPageMs: number[];
  jobMs: number[];
  usageMs: number[];
  overviewMs: number[];
  jobsPageMs: number[];
  /** SIGTERM → exited, spawn → listening, spawn → the first API call answered; seconds. */
  restarts: { stop: number; listen: number; ready: number }[];
  sweep?: SweepFigures;
}

export interface SweepFigures {
  /** Jobs (and ledger rows) the sweep removed, and how long it took, from the server's spawn. */
  removedJobs: number;
  removedAllocations: number;
  seconds: number;
  quiet: { submissions: number; p50: number; p99: number; max: number };
  during: { submissions: number; p50: number; p99: number; max: number };
}

/** The store the bench measures: BERTH_BENCH_HISTORY_STORE, sqlite (the default) or postgres. */
function historyStore(): BenchStore {
  const store = process.env.BERTH_BENCH_HISTORY_STORE ?? 'sqlite';
  if (store !== 'sqlite' && store !== 'postgres')
    throw new Error(`BERTH_BENCH_HISTORY_STORE: "${store}" is neither sqlite nor postgres`);
  return store;
}

/** A connection to an installation's store that reads one number (the first column) a query. */
interface Reader {
  value(sql: string): Promise<number>;
  close(): Promise<void>;
}

/** An installation's store, as the bench reaches it besides its server. */
interface InstallationStore {
  /** The server's `--database`: sqlite, or the PostgreSQL database's URL. */
  database: string;
  seed(shape: HistoryShape, progress: (line: string) => void): Promise<SeedFigures>;
  /** Seeds a log for each job of `ranges` where this store keeps them: how many. */
  logs(ranges: [lo: number, hi: number][]): Promise<number>;
  /** The database's bytes, the logs left out, the server stopped. */
  bytes(): Promise<number>;
  reader(): Promise<Reader>;
  /** Drops what the store keeps outside the installation's directory. */
  drop(): Promise<void>;
}

/** berth.db in the data directory, the logs in files beside it. */
function sqliteStore(dataDir: string): InstallationStore {
  const file = join(dataDir, 'berth.db');
  return {
    database: 'sqlite',
    seed: async (shape, progress) => seedHistory(file, shape, progress),
    logs: async (ranges) => seedLogs(dataDir, ranges),
    bytes: async () => statSync(file).size,
    reader: async () => {
      const db = new BetterSqlite3(file, { readonly: true });
      return {
        value: async (sql) => Number(db.prepare(sql).pluck().get()),
        close: async () => void db.close(),
      };
    },
    drop: async () => {},
  };
}

async function pgAdmin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

let databases = 0;

/** A new PostgreSQL database for an installation, its logs in it too. */
async function pgStore(): Promise<InstallationStore> {
  const name = `berth_bench_history_${process.pid}_${databases++}`;
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  await pgAdmin(`CREATE DATABASE ${name}`);
  const reader = async (): Promise<Reader> => {
    const client = new pg.Client({ connectionString: url.href, application_name: 'berth-bench' });
    await client.connect();
    return {
      value: async (sql) =>
        Number((await client.query<unknown[]>({ text: sql, rowMode: 'array' })).rows[0]![0]),
      close: () => client.end(),
    };
  };
  return {
    database: url.href,
    seed: (shape, progress) => seedHistoryPg(url.href, shape, progress),
    logs: (ranges) => seedLogsPg(url.href, ranges),
    bytes: async () => {
      const r = await reader();
      try {
        return await r.value(
          `SELECT pg_database_size(current_database()) - pg_total_relation_size('job_logs')`,
        );
      } finally {
        await r.close();
      }
    },
    reader,
    drop: () => pgAdmin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** The cluster queues and projects of both installations, made through the API on a first start. */
async function setUp(dataDir: string, configFile: string, database: string): Promise<void> {
  const s = await startServer(dataDir, configFile, BUILT_MAIN, database);
  try {
    await post(s.api, s.token, '/cluster-queues', { name: 'work', quota: { jobs: 100 } });
    await post(s.api, s.token, '/cluster-queues', { name: 'batch', quota: { jobs: 100 } });
    await post(s.api, s.token, '/cluster-queues', {
      name: 'parking',
      quota: { jobs: 1 },
      stopPolicy: 'Hold',
    });
    await post(s.api, s.token, '/projects', { name: PROJECT, clusterQueue: 'work' });
    await post(s.api, s.token, '/projects', { name: 'flood', clusterQueue: 'parking' });
    for (let t = 0; t < 7; t++)
      await post(s.api, s.token, '/projects', { name: `team-${t}`, clusterQueue: 'batch' });
  } finally {
    await stopServer(s, 'SIGTERM');
  }
}

/** One GET, timed at the client; fails unless it answers `status`. */
async function timedGet(s: Server, path: string, status = 200): Promise<number> {
  const t = performance.now();
  const res = await fetch(s.api + path, { headers: { authorization: `Bearer ${s.token}` } });
  await res.arrayBuffer();
  if (res.status !== status) throw new Error(`GET ${path}: ${res.status}, not ${status}`);
  return performance.now() - t;
}

const api = (s: Server, path: string) => timed(RUNS, 3, () => timedGet(s, path));

/** Navigation start → the first element matching the marked selector, ms (window.__berthRows). */
async function load(page: Page, url: string, selector: string): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.locator(selector).first().waitFor({ state: 'visible' });
  return page.evaluate<number>('window.__berthRows');
}

/** The dashboard's first load: the overview and project p's jobs page, in a signed-in context. */
async function dashboard(
  s: Server,
  browser: Browser,
): Promise<{ overviewMs: number[]; jobsPageMs: number[] }> {
  const measure = async (path: string, selector: string): Promise<number[]> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(120_000);
      await signIn(page, s.url, s.token);
      await context.addInitScript(markFirstRows(selector));
      return await timed(PAGE_RUNS, 1, () => load(page, s.url + path, selector));
    } finally {
      await context.close();
    }
  };
  return {
    overviewMs: await measure('/', 'section.card.queue'),
    jobsPageMs: await measure(`/projects/${PROJECT}/jobs`, 'table tbody a[href^="/jobs/"]'),
  };
}

/**
 * The server of an installation, while one runs: whoever stops it clears it, whoever starts one
 * sets it, so that the bench's cleanup stops the one running whatever failed. `database`: the
 * store it runs on (InstallationStore).
 */
interface Held {
  server?: Server;
  database: string;
}

async function stopHeld(held: Held): Promise<number> {
  const s = held.server;
  held.server = undefined;
  return s ? stopServer(s, 'SIGTERM') : 0;
}

async function startHeld(held: Held, dataDir: string, configFile: string): Promise<Server> {
  held.server = await startServer(dataDir, configFile, BUILT_MAIN, held.database);
  return held.server;
}

/** Restarts the server RESTARTS times: how long each stop and start took. */
async function restarts(
  held: Held,
  dataDir: string,
  configFile: string,
): Promise<InstallationFigures['restarts']> {
  const figures: InstallationFigures['restarts'] = [];
  for (let i = 0; i < RESTARTS; i++) {
    const stop = await stopHeld(held);
    const t0 = performance.now();
    const s = await startHeld(held, dataDir, configFile);
    await timedGet(s, `/projects/${PROJECT}/jobs?limit=50`);
    figures.push({ stop, listen: s.startSeconds, ready: (performance.now() - t0) / 1000 });
  }
  return figures;
}

/**
 * Submissions at SUBMIT_RATE a second into the held queue until `done()` says so (at least one
 * second's worth): each one's latency, ms. Open loop: a slow answer does not slow the next.
 */
async function submissions(s: Server, done: () => boolean | Promise<boolean>): Promise<number[]> {
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  const body = { command: ['./task.sh', '--input', 'data/part'], requests: { cpu: '1' } };
  const t0 = performance.now();
  for (let k = 0; k < SUBMIT_RATE || !(await done()); k++) {
    const wait = t0 + (k * 1000) / SUBMIT_RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t = performance.now();
    const p: Promise<void> = post(s.api, s.token, '/projects/flood/jobs', body).then(() => {
      latencies.push(performance.now() - t);
      inFlight.delete(p);
    });
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  return latencies;
}

const summary = (xs: number[]) => ({
  submissions: xs.length,
  p50: quantile(xs, 0.5),
  p99: quantile(xs, 0.99),
  max: Math.max(...xs),
});

/**
 * The quiet run on the running server, then the sweep: the server restarted with the default
 * retention, submissions flowing until no job and no allocation older than the cut-off is left.
 */
async function sweep(
  held: Held,
  store: InstallationStore,
  dataDir: string,
  dir: string,
): Promise<SweepFigures> {
  let s = held.server!;
  // No warm-up: the sweep's server is measured from its start, so the quiet one is too (the
  // last restart's, which has answered one request).
  const t1 = performance.now();
  const quiet = await submissions(s, () => performance.now() - t1 > QUIET_SECONDS * 1000);
  await stopHeld(held);
  const cutoff = Date.now() - RETENTION_DAYS * 86_400_000;
  // The same SQL on either store: the cut-off a literal, a boolean cast to a number.
  const db = await store.reader();
  try {
    const count = async () => ({
      jobs: await db.value(`SELECT count(*) FROM jobs WHERE finished_at < ${cutoff}`),
      allocations: await db.value(`SELECT count(*) FROM usage_ledger WHERE ended_at < ${cutoff}`),
    });
    const before = await count();
    const configFile = join(dir, 'sweep.yaml');
    writeFileSync(configFile, FACTORY); // the default retention
    const t0 = performance.now();
    s = await startHeld(held, dataDir, configFile);
    // Done when the oldest job left is newer than the cut-off and the ledger has nothing older.
    const left = `SELECT CAST((SELECT coalesce(min(finished_at), ${cutoff}) FROM jobs WHERE id = (SELECT min(id) FROM jobs)) < ${cutoff}
        OR EXISTS (SELECT 1 FROM usage_ledger WHERE ended_at < ${cutoff}) AS INTEGER)`;
    let seconds = 0;
    let looked = 0;
    const done = async () => {
      if (seconds > 0) return true;
      if (performance.now() - looked < 250) return false; // a look every quarter second is enough
      looked = performance.now();
      if (await db.value(left)) return false;
      seconds = (performance.now() - t0) / 1000;
      return true;
    };
    const during = await submissions(s, done);
    const after = await count();
    return {
      removedJobs: before.jobs - after.jobs,
      removedAllocations: before.allocations - after.allocations,
      seconds,
      quiet: summary(quiet),
      during: summary(during),
    };
  } finally {
    await db.close();
  }
}

async function installation(
  kind: BenchStore,
  jobs: number,
  browser: Browser,
  withSweep: boolean,
): Promise<InstallationFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-history-'));
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, FACTORY + KEEP_ALL);
  let store: InstallationStore | undefined;
  const held: Held = { database: 'sqlite' };
  try {
    store = kind === 'postgres' ? await pgStore() : sqliteStore(dataDir);
    held.database = store.database;
    await setUp(dataDir, configFile, store.database);
    const now = Date.now();
    const say = (line: string) => console.log(`  [${fmt(jobs)}] seeding: ${line}`);
    const seed = await store.seed({ jobs, days: DAYS, now }, say);
    // Logs: the newest 10,000 jobs', and those of the jobs the sweep will remove (the oldest
    // tenth, and a little more: the cut-off moves on while the bench runs).
    const t0 = performance.now();
    const swept = Math.ceil((jobs * (DAYS - RETENTION_DAYS)) / DAYS) + Math.ceil(jobs / 1000);
    const newest = Math.max(1, jobs - SMALL + 1);
    const ranges: [number, number][] = [[1, swept]];
    if (newest <= swept + 1) ranges[0] = [1, jobs];
    else ranges.push([newest, jobs]);
    const logs = await store.logs(ranges);
    const logSeconds = (performance.now() - t0) / 1000;
    const dbBytes = await store.bytes();
    // The SQLite seed writes with the journal and syncs off, and the log files are written in
    // one go: gigabytes the kernel would write back while the first figures are taken (a 10
    // million run's dashboard measured 2.2x slower once, 0.7x in the run before). Written now.
    const t1 = performance.now();
    execFileSync('sync');
    const what = kind === 'postgres' ? 'job_logs rows' : 'log files';
    say(
      `${fmt(seed.seconds, 1)} s, ${fmt(logs)} ${what} in ${fmt(logSeconds, 1)} s, synced in ${fmt((performance.now() - t1) / 1000, 1)} s; measuring`,
    );

    const s = await startHeld(held, dataDir, configFile);
    const deep = Math.ceil(jobs / 10);
    const firstPageMs = await api(s, `/projects/${PROJECT}/jobs?limit=50`);
    const deepPageMs = await api(s, `/projects/${PROJECT}/jobs?limit=50&before=${deep}`);
    const jobMs = await api(s, `/jobs/${Math.ceil(jobs / 3)}`);
    const usageMs = await api(s, '/usage?since=30d&by=project');
    const pages = await dashboard(s, browser);
    const restartFigures = await restarts(held, dataDir, configFile);
    const sweepFigures = withSweep ? await sweep(held, store, dataDir, dir) : undefined;
    return {
      jobs,
      seed,
      logs,
      logSeconds,
      dbBytes,
      firstPageMs,
      deepPageMs,
      jobMs,
      usageMs,
      ...pages,
      restarts: restartFigures,
      sweep: sweepFigures,
    };
  } finally {
    try {
      await stopHeld(held);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await store?.drop();
    }
  }
}

export interface HistoryResult {
  store: BenchStore;
  small: InstallationFigures;
  large: InstallationFigures;
}

export async function runHistoryBench(
  large = Number(process.env.BERTH_BENCH_HISTORY_JOBS) || 10_000_000,
  store = historyStore(),
): Promise<HistoryResult> {
  await ensureWebBuild();
  const browser = await launchChromium();
  try {
    const small = await installation(store, SMALL, browser, false);
    return { store, small, large: await installation(store, large, browser, true) };
  } finally {
    await browser.close();
  }
}

const verdict = (ratio: number, target = 1.5) => (ratio <= target ? 'met' : 'MISSED');

export function printHistoryBench(r: HistoryResult): void {
  const { small: a, large: b } = r;
  const onPg = r.store === 'postgres';
  console.log(
    onPg
      ? `  store: PostgreSQL (${new URL(PG_ADMIN_URL).host}, a new database for each installation; logs in job_logs)`
      : '  store: SQLite (berth.db in the data directory; logs in files)',
  );
  for (const x of [a, b]) {
    const rate = x.jobs / x.seed.seconds;
    console.log(
      `  seeded ${fmt(x.jobs)} ended jobs in ${fmt(x.seed.seconds, 1)} s (${fmt(rate)} jobs/s; ${Object.entries(
        x.seed.rows,
      )
        .map(([t, n]) => `${t} ${fmt(n)}`)
        .join(', ')}); ${fmt(x.logs)} ${onPg ? 'job_logs rows' : 'log files'} in ${fmt(x.logSeconds, 1)} s`,
    );
  }
  const rows: [string, number, number, string][] = [
    ['GET /projects/p/jobs?limit=50, first page', median(a.firstPageMs), median(b.firstPageMs), 'ms'],
    [
      'GET /projects/p/jobs?limit=50, deep page (before a tenth in)',
      median(a.deepPageMs),
      median(b.deepPageMs),
      'ms',
    ],
    ['GET /jobs/{id} (a job a third in)', median(a.jobMs), median(b.jobMs), 'ms'],
    ['GET /usage?since=30d&by=project (berth usage --since 30d)', median(a.usageMs), median(b.usageMs), 'ms'],
    ['dashboard, overview: navigation → queue cards', median(a.overviewMs), median(b.overviewMs), 'ms'],
    ['dashboard, jobs page of p: navigation → first rows', median(a.jobsPageMs), median(b.jobsPageMs), 'ms'],
    ...(['listen', 'ready'] as const).map((k): [string, number, number, string] => [
      `restart (SIGTERM, then spawn → ${k === 'listen' ? 'listening' : 'first page answered'})`,
      median(a.restarts.map((x) => x[k])),
      median(b.restarts.map((x) => x[k])),
      's',
    ]),
    [
      'stop (SIGTERM → exited)',
      median(a.restarts.map((x) => x.stop)),
      median(b.restarts.map((x) => x.stop)),
      's',
    ],
    [
      `database bytes per ended job${onPg ? ' (pg_database_size less job_logs)' : ''}`,
      a.dbBytes / a.jobs,
      b.dbBytes / b.jobs,
      'B',
    ],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  console.log(`  ${''.padEnd(width)}  ${fmt(a.jobs).padStart(10)}  ${fmt(b.jobs).padStart(12)}  ratio`);
  for (const [label, x, y, unit] of rows) {
    const digits = unit === 's' ? 2 : unit === 'ms' ? 1 : 0;
    console.log(
      `  ${label.padEnd(width)}  ${`${fmt(x, digits)} ${unit}`.padStart(10)}  ${`${fmt(y, digits)} ${unit}`.padStart(12)}  ${fmt(y / x, 2)} (${verdict(y / x)})`,
    );
  }
  const w = b.sweep;
  if (!w) return;
  console.log(
    `  retention sweep at start (jobs and ledger 90 days): removed ${fmt(w.removedJobs)} jobs and ${fmt(w.removedAllocations)} allocations in ${fmt(w.seconds, 1)} s (from the spawn)`,
  );
  const ratio = w.during.p99 / w.quiet.p99;
  console.log(
    `  submissions at ${SUBMIT_RATE}/s, held queue: quiet (${QUIET_SECONDS} s, ${fmt(w.quiet.submissions)}) p50 ${fmt(w.quiet.p50, 1)} ms, p99 ${fmt(w.quiet.p99, 1)} ms, max ${fmt(w.quiet.max, 0)} ms; during the sweep (${fmt(w.during.submissions)}) p50 ${fmt(w.during.p50, 1)} ms, p99 ${fmt(w.during.p99, 1)} ms, max ${fmt(w.during.max, 0)} ms — ratio ${fmt(ratio, 2)} (${verdict(ratio)})`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printHistoryBench(await runHistoryBench());
