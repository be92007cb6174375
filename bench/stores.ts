/**
 * The two stores side by side, in one run (`npm run bench -- stores`): job submissions over HTTP
 * and Kueue's baseline scenario through a real server, each on SQLite and on PostgreSQL
 * (127.0.0.1:5432, a new database each time, one replica leading). Targets (issue #14): Kueue's
 * baseline on PostgreSQL within 1.15× SQLite's wall time; ≥ 2,500 submissions/s on PostgreSQL.
 */
import { runApiBench, type ApiBenchResult } from './api.js';
import { runKueueBench, SCENARIOS, type KueueBenchResult } from './kueue.js';
import { fmt, type BenchStore } from './lib.js';

export interface StoresBenchResult {
  api: Record<BenchStore, ApiBenchResult>;
  kueue: Record<BenchStore, KueueBenchResult>;
}

const STORES: BenchStore[] = ['sqlite', 'postgres'];

export async function runStoresBench(): Promise<StoresBenchResult> {
  const api = {} as Record<BenchStore, ApiBenchResult>;
  const kueue = {} as Record<BenchStore, KueueBenchResult>;
  for (const store of STORES) api[store] = await runApiBench(20_000, 64, store);
  for (const store of STORES) kueue[store] = await runKueueBench(SCENARIOS.kueue, store);
  return { api, kueue };
}

export function printStoresBench(r: StoresBenchResult): void {
  const rows: [string, string, string, string][] = [['', 'SQLITE', 'POSTGRESQL', 'POSTGRESQL / SQLITE']];
  const add = (name: string, s: number, p: number, digits = 0) =>
    rows.push([name, fmt(s, digits), fmt(p, digits), fmt(p / s, 2)]);
  add('submissions/s (64 in flight)', r.api.sqlite.submissionsPerSecond, r.api.postgres.submissionsPerSecond);
  add(
    'submissions per server CPU-second',
    r.api.sqlite.submissionsPerServerCpuSecond,
    r.api.postgres.submissionsPerServerCpuSecond,
  );
  add(
    "Kueue's baseline: wall time, s",
    r.kueue.sqlite.real.wallMs / 1000,
    r.kueue.postgres.real.wallMs / 1000,
    1,
  );
  add(
    "Kueue's baseline: server CPU, s",
    r.kueue.sqlite.serverCpuSeconds,
    r.kueue.postgres.serverCpuSeconds,
    1,
  );
  for (const c of r.kueue.sqlite.real.workloadClasses) {
    const p = r.kueue.postgres.real.workloadClasses.find((x) => x.className === c.className);
    if (p)
      add(
        `  ${c.className}: avg to admission, s`,
        (c.avgTimeToAdmissionMs ?? 0) / 1000,
        (p.avgTimeToAdmissionMs ?? 0) / 1000,
        1,
      );
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows)
    console.log(
      '  ' + row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  '),
    );
  const wallRatio = r.kueue.postgres.real.wallMs / r.kueue.sqlite.real.wallMs;
  const rate = r.api.postgres.submissionsPerSecond;
  console.log(
    `  Kueue's baseline on PostgreSQL within 1.15× SQLite's wall time: ${fmt(wallRatio, 3)}× — ${wallRatio <= 1.15 ? 'met' : 'NOT met'}`,
  );
  console.log(`  ≥ 2,500 submissions/s on PostgreSQL: ${fmt(rate)}/s — ${rate >= 2500 ? 'met' : 'NOT met'}`);
  for (const store of STORES) {
    const k = r.kueue[store];
    if (k.timedOut || k.submitFailures.length > 0)
      console.log(
        `  ${store}: ${k.timedOut ? 'timed out; ' : ''}${k.submitFailures.length} submissions failed`,
      );
  }
}
