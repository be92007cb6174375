/**
 * metrics: what `GET /metrics` costs at an installation's scale (issue #43) — 1,000 projects over
 * 10 cluster queues in one cohort (cpu, memory and gpu quota each), 2,000 jobs run through them
 * (simulated factory), the API's routes exercised — then how many series a scrape holds (labels
 * are bounded: never a job, and a project only with `metrics.perProject` on) and how long a
 * scrape takes, against a bare node:http server answering the same bytes, measured in the same
 * run; once as a server starts, once with the per-project series on.
 *
 * Targets: at most 3,000 berth_ series, and a scrape's median within 50 ms (a twentieth of a 1 s
 * scrape interval, the shortest anyone sets); with the per-project series, 23 more per project
 * and a median within 200 ms. The ratio to the bare server says what of it is
 * prom-client's making of the text: most is the API latency histogram's (a route × 15 buckets).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fmt, get, pool, post, startBenchServer } from './lib.js';

const QUEUES = 10;
const PROJECTS = 1000;
const JOBS_PER_PROJECT = 2;
const SCRAPES = 200;
export const MAX_SERIES = 3000;
export const MAX_MEDIAN_MS = 50;
/** With `metrics.perProject` on: 23 series per project that had a job (docs/OPERATIONS.md). */
export const PER_PROJECT_SERIES = 23;
/** With the switch on, a scrape of its 26,000 series within a fifth of a 1 s interval. */
export const MAX_PER_PROJECT_MEDIAN_MS = 200;

export interface MetricsBench {
  /** With `metrics: { perProject: true }`. */
  perProject: boolean;
  series: number;
  berthSeries: number;
  bytes: number;
  scrapeMedianMs: number;
  scrapeP99Ms: number;
  bareMedianMs: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** `n` sequential GETs of `url`: each one's time in ms, sorted; and the last body. */
async function timeGets(url: string, token: string, n: number): Promise<{ ms: number[]; body: string }> {
  const ms: number[] = [];
  let body = '';
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    body = await r.text();
    ms.push(performance.now() - t0);
  }
  return { ms: ms.sort((a, b) => a - b), body };
}

export async function runMetricsBench(perProject = false): Promise<MetricsBench> {
  const server = await startBenchServer(
    [
      'factories:',
      '  sim: { kind: simulated, capacity: 64 }',
      'targets:',
      '  sim: { factory: sim }',
      ...(perProject ? ['metrics: { perProject: true }'] : []),
    ].join('\n'),
  );
  try {
    const { api, token } = server;
    for (let q = 0; q < QUEUES; q++)
      await post(api, token, '/cluster-queues', {
        name: `q${q}`,
        cohort: 'all',
        quota: { cpu: '64', memory: '256Gi', gpu: '8' },
        borrowingLimit: { cpu: '32' },
      });
    await pool(PROJECTS, 16, (p) =>
      post(api, token, '/projects', { name: `p${p}`, clusterQueue: `q${p % QUEUES}` }),
    );
    await pool(PROJECTS * JOBS_PER_PROJECT, 32, (i) =>
      post(api, token, `/projects/p${i % PROJECTS}/jobs`, {
        command: ['sleep', '0'],
        requests: { cpu: '1' },
      }),
    );
    // Every job through, and each job's page read once (the API's routes in the series too).
    const total = PROJECTS * JOBS_PER_PROJECT;
    for (;;) {
      const text = await (
        await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${token}` } })
      ).text();
      const done = /^berth_jobs_finished_total\{state="succeeded"\} (\d+)$/m.exec(text);
      if (Number(done?.[1]) >= total) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await pool(total, 16, (i) => get(api, token, `/jobs/${i + 1}`));
    const scraped = await timeGets(`${api}/metrics`, token, SCRAPES);
    const lines = scraped.body.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    // The same bytes from a bare node:http server, fetched the same way.
    const bare = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(scraped.body);
    });
    await new Promise<void>((r) => bare.listen(0, '127.0.0.1', r));
    const { port } = bare.address() as AddressInfo;
    const baseline = await timeGets(`http://127.0.0.1:${port}/metrics`, token, SCRAPES);
    await new Promise((r) => bare.close(r));
    return {
      perProject,
      series: lines.length,
      berthSeries: lines.filter((l) => l.startsWith('berth_')).length,
      bytes: Buffer.byteLength(scraped.body),
      scrapeMedianMs: quantile(scraped.ms, 0.5),
      scrapeP99Ms: quantile(scraped.ms, 0.99),
      bareMedianMs: quantile(baseline.ms, 0.5),
    };
  } finally {
    await server.stop();
  }
}

export function printMetricsBench(r: MetricsBench): void {
  const bound = MAX_SERIES + (r.perProject ? PER_PROJECT_SERIES * PROJECTS : 0);
  const target = r.perProject ? MAX_PER_PROJECT_MEDIAN_MS : MAX_MEDIAN_MS;
  console.log(
    `  ${fmt(PROJECTS)} projects over ${QUEUES} cluster queues, ${fmt(PROJECTS * JOBS_PER_PROJECT)} jobs run, each job's page read; per-project series ${r.perProject ? 'on' : 'off'}`,
  );
  console.log(
    `  a scrape: ${fmt(r.series)} series (${fmt(r.berthSeries)} berth_), ${fmt(r.bytes / 1024, 1)} KiB; berth_ series ${r.berthSeries <= bound ? 'within' : 'OVER'} the bound of ${fmt(bound)}`,
  );
  const ratio = r.scrapeMedianMs / r.bareMedianMs;
  console.log(
    `  GET /metrics: median ${fmt(r.scrapeMedianMs, 2)} ms (target ≤ ${target} ms: ${r.scrapeMedianMs <= target ? 'met' : 'missed'}), p99 ${fmt(r.scrapeP99Ms, 2)} ms; a bare node:http server with the same bytes: median ${fmt(r.bareMedianMs, 2)} ms (berth ${fmt(ratio, 1)}×)`,
  );
}
