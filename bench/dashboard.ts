/**
 * (d) Dashboard: a project with 100,000 jobs, and how long the jobs page takes to show its first
 * page in chromium — from navigation start to the first page's rows in the DOM — sorted newest
 * first and by priority, and to show the next page; against the bare API call for the same page
 * (`GET /projects/p/jobs?limit=50`) measured in the same run. Target: first page < 1 s.
 *
 * Seeding: the server makes its store (and the admin, the queue, the project) on a first start;
 * then, with the server stopped, the 100,000 finished jobs go straight into the SQLite file in
 * one transaction (through the API they would take ~50 s at ~2,000 submissions/s); then the
 * server starts again on that file.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import type { JobSpec, JobState } from '../src/domain/job.js';
import type { JobsTable } from '../src/store/schema.js';
import { ensureWebBuild, launchChromium, signIn } from '../test/helpers/browser.js';
import { spawnServer, type ServerProcess } from '../test/helpers/server-process.js';
import { fmt, post } from './lib.js';

export const PROJECT = 'p';

type SeedRow = Omit<
  JobsTable,
  'id' | 'retried' | 'infra_retried' | 'retry_at' | 'array_id' | 'array_index' | 'queued_at'
>;

/** A small deterministic generator, so every run seeds the same jobs. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export interface Seeded {
  jobs: number;
  seconds: number;
  /** The last id inserted. */
  newest: number;
  /** The newest cancelled job (the first row of `?state=cancelled`). */
  newestCancelled: number;
  /** The one job with the highest and the one with the lowest priority. */
  highest: number;
  lowest: number;
}

/**
 * Inserts `n` finished jobs (succeeded, failed, cancelled; priorities −10…10 plus one at 1000 and
 * one at −1000) into `project` of the store at `dbFile`, in one transaction. The server must be
 * stopped: it keeps its own model of unfinished jobs, and these are all finished and cleaned up.
 */
export function seedFinishedJobs(dbFile: string, project: string, queue: string, n: number): Seeded {
  const t0 = performance.now();
  const db = new BetterSqlite3(dbFile);
  try {
    const insert = db.prepare<SeedRow>(
      `INSERT INTO jobs (project, name, state, reason, cluster_queue, target, priority, spec,
         idempotency_key, created_by, exit_code, borrowed, cancel_requested, cleaned_up, attempts,
         created_at, admitted_at, started_at, finished_at)
       VALUES (@project, @name, @state, @reason, @cluster_queue, @target, @priority, @spec,
         @idempotency_key, @created_by, @exit_code, @borrowed, @cancel_requested, @cleaned_up, @attempts,
         @created_at, @admitted_at, @started_at, @finished_at)`,
    );
    const first = (db.prepare('SELECT coalesce(max(id), 0) AS id FROM jobs').get() as { id: number }).id + 1;
    const rand = random(42);
    const highest = first + Math.floor(n / 3);
    const lowest = first + Math.floor((2 * n) / 3);
    const start = Date.now() - 30 * 24 * 3600_000;
    const spacing = (30 * 24 * 3600_000) / n;
    let newestCancelled = 0;
    db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const id = first + i;
        const r = rand();
        const state: JobState = r < 0.8 ? 'succeeded' : r < 0.92 ? 'failed' : 'cancelled';
        if (state === 'cancelled') newestCancelled = id;
        const created = Math.round(start + i * spacing);
        const admitted = created + Math.round(rand() * 5_000);
        const startedAt = admitted + 300;
        const finished = startedAt + Math.round(rand() * 600_000);
        const spec: JobSpec = {
          command: ['sh', '-c', `python train.py --shard ${i % 97}`],
          env: {},
          timeoutSeconds: null,
          requests: { cpu: String(1 + (i % 4)), memory: `${1 + (i % 8)}Gi` },
          resources: [],
          dependsOn: [],
        };
        insert.run({
          project,
          name: `train-${i % 97}-${i}`,
          state,
          reason:
            state === 'succeeded'
              ? 'exited with code 0'
              : state === 'failed'
                ? 'exited with code 1'
                : 'cancelled by admin',
          cluster_queue: queue,
          target: 'local',
          priority: id === highest ? 1000 : id === lowest ? -1000 : Math.floor(rand() * 21) - 10,
          spec: JSON.stringify(spec),
          idempotency_key: null,
          created_by: 'admin',
          exit_code: state === 'succeeded' ? 0 : state === 'failed' ? 1 : null,
          borrowed: null,
          cancel_requested: state === 'cancelled' ? 1 : 0,
          cleaned_up: 1,
          attempts: 1,
          created_at: created,
          admitted_at: admitted,
          started_at: startedAt,
          finished_at: finished,
        });
      }
    })();
    return {
      jobs: n,
      seconds: (performance.now() - t0) / 1000,
      newest: first + n - 1,
      newestCancelled,
      highest,
      lowest,
    };
  } finally {
    db.close();
  }
}

async function stop(s: ServerProcess): Promise<void> {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

/** Times, in ms, of `runs` runs of `once` after `warmup` unmeasured ones. */
export async function timed(runs: number, warmup: number, once: () => Promise<number>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await once();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) out.push(await once());
  return out;
}

/**
 * A page script that records when the jobs table first has a row matching `rows` (ms since
 * navigation start), in `window.__berthRows`. A MutationObserver sees the rows the moment React
 * inserts them, without the polling delay of waiting from outside.
 */
export const markFirstRows = (rows: string): string => `(() => {
  const check = () => {
    if (window.__berthRows === undefined && document.querySelector(${JSON.stringify(rows)})) {
      window.__berthRows = performance.now();
    }
  };
  new MutationObserver(check).observe(document, { childList: true, subtree: true });
})();`;

const MARK_FIRST_ROWS = markFirstRows('table tbody a[href^="/jobs/"]');

const jobLink = (id: number) => `table a[href$="/jobs/${id}"]`;

/**
 * Navigation start → the first page's rows are in the DOM, in ms (a fresh load of the app each
 * time); checks that the page is the one expected (its first row links to `firstId`).
 */
async function loadJobsPage(page: Page, url: string, firstId: number): Promise<number> {
  await page.goto(url, { waitUntil: 'commit' });
  await page.locator(jobLink(firstId)).first().waitFor({ state: 'visible' });
  const first = await page
    .locator('table tbody tr')
    .first()
    .locator('a[href^="/jobs/"]')
    .getAttribute('href');
  if (first !== `/jobs/${firstId}`) throw new Error(`${url}: the first row is ${first}, not job ${firstId}`);
  return page.evaluate<number>('window.__berthRows');
}

export interface DashboardBenchResult {
  jobs: number;
  seedSeconds: number;
  serverStartSeconds: number;
  totalCount: string | null;
  apiNewestMs: number[];
  apiPriorityMs: number[];
  pageColdMs: number;
  pageNewestMs: number[];
  pagePriorityMs: number[];
  pagePriorityAscMs: number[];
  pageCancelledMs: number[];
  nextPageMs: number[];
  previousPageMs: number[];
}

export async function runDashboardBench(n = 100_000, runs = 5): Promise<DashboardBenchResult> {
  await ensureWebBuild();
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-dashboard-'));
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, 'factories:\n  local: { kind: local, capacity: 2 }\n');
  try {
    const first = await spawnServer(dataDir, configFile);
    try {
      await post(first.api, first.token, '/cluster-queues', {
        name: 'bench',
        quota: { cpu: '64', jobs: 100 },
      });
      await post(first.api, first.token, '/projects', { name: PROJECT, clusterQueue: 'bench' });
    } finally {
      await stop(first);
    }
    const seeded = seedFinishedJobs(join(dataDir, 'berth.db'), PROJECT, 'bench', n);
    const newest = seeded.newest;
    const t0 = performance.now();
    const s = await spawnServer(dataDir, configFile);
    const serverStartSeconds = (performance.now() - t0) / 1000;
    const browser = await launchChromium();
    try {
      const api = async (query: string): Promise<number> => {
        const t = performance.now();
        const res = await fetch(`${s.api}/projects/${PROJECT}/jobs?${query}`, {
          headers: { authorization: `Bearer ${s.token}` },
        });
        const body = (await res.json()) as { id: number }[];
        if (!res.ok || body.length !== 50) throw new Error(`GET jobs?${query}: ${res.status}`);
        return performance.now() - t;
      };
      const apiNewestMs = await timed(runs * 4, 3, () => api('limit=50'));
      const apiPriorityMs = await timed(runs * 4, 3, () => api('limit=50&sort=-priority'));
      const head = await fetch(`${s.api}/projects/${PROJECT}/jobs?limit=50`, {
        headers: { authorization: `Bearer ${s.token}` },
      });
      const totalCount = head.headers.get('x-total-count');

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await signIn(page, s.url, s.token);
      await context.addInitScript(MARK_FIRST_ROWS);
      const jobsUrl = `${s.url}/projects/${PROJECT}/jobs`;
      // The first load fetches the app's script and styles (the cache emptied after signing in);
      // the next ones have them cached.
      const cdp = await context.newCDPSession(page);
      await cdp.send('Network.clearBrowserCache');
      const pageColdMs = await loadJobsPage(page, jobsUrl, newest);
      const pageNewestMs = await timed(runs, 0, () => loadJobsPage(page, jobsUrl, newest));
      const pagePriorityMs = await timed(runs, 1, () =>
        loadJobsPage(page, `${jobsUrl}?sort=-priority`, seeded.highest),
      );
      const pagePriorityAscMs = await timed(runs, 1, () =>
        loadJobsPage(page, `${jobsUrl}?sort=priority`, seeded.lowest),
      );
      const pageCancelledMs = await timed(runs, 1, () =>
        loadJobsPage(page, `${jobsUrl}?state=cancelled`, seeded.newestCancelled),
      );

      // Next page and back: from the click to the first row of the other page.
      const nextPageMs: number[] = [];
      const previousPageMs: number[] = [];
      for (let i = 0; i < runs + 1; i++) {
        await loadJobsPage(page, jobsUrl, newest);
        let t = performance.now();
        await page.getByRole('button', { name: 'Next page' }).click();
        await page.locator(jobLink(newest - 50)).waitFor();
        const next = performance.now() - t;
        t = performance.now();
        await page.getByRole('button', { name: 'Previous page' }).click();
        await page.locator(jobLink(newest)).waitFor();
        const previous = performance.now() - t;
        if (i > 0) {
          nextPageMs.push(next);
          previousPageMs.push(previous);
        }
      }
      await context.close();
      return {
        jobs: n,
        seedSeconds: seeded.seconds,
        serverStartSeconds,
        totalCount,
        apiNewestMs,
        apiPriorityMs,
        pageColdMs,
        pageNewestMs,
        pagePriorityMs,
        pagePriorityAscMs,
        pageCancelledMs,
        nextPageMs,
        previousPageMs,
      };
    } finally {
      await browser.close();
      await stop(s);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const ms = (xs: number[]) =>
  `median ${fmt(median(xs))} ms, max ${fmt(Math.max(...xs))} ms (${xs.length} runs)`;

export function printDashboardBench(r: DashboardBenchResult): void {
  console.log(
    `  seeded ${fmt(r.jobs)} finished jobs in one project straight into SQLite, one transaction: ${fmt(r.seedSeconds, 2)} s`,
  );
  console.log(
    `  server start on that store: ${fmt(r.serverStartSeconds, 2)} s; X-Total-Count: ${r.totalCount}`,
  );
  const rows: [string, number[]][] = [
    ['API baseline: GET /projects/p/jobs?limit=50 (fetch)', r.apiNewestMs],
    ['API baseline: same, &sort=-priority', r.apiPriorityMs],
    ['jobs page, first visit (app not cached): navigation start → rows', [r.pageColdMs]],
    ['jobs page, newest first: navigation start → rows', r.pageNewestMs],
    ['jobs page, ?sort=-priority: navigation start → rows', r.pagePriorityMs],
    ['jobs page, ?sort=priority: navigation start → rows', r.pagePriorityAscMs],
    ['jobs page, ?state=cancelled (8 % of jobs): navigation start → rows', r.pageCancelledMs],
    ['jobs page, Next page: click → rows', r.nextPageMs],
    ['jobs page, Previous page: click → rows', r.previousPageMs],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  for (const [label, xs] of rows) console.log(`  ${label.padEnd(width)}  ${ms(xs)}`);
  console.log(`  target: the first page in < 1,000 ms`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  printDashboardBench(await runDashboardBench());
}
