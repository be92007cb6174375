/**
 * `npm run bench -- usage` (issue #16): `GET /usage` over the rollups of 1,000,000 allocations
 * (30 days, 20 projects, 50 users, 3 queues; cpu and memory), hourly and daily, written straight
 * into the SQLite file of an idle server by the same splitting the controller uses
 * (domain/usage.ts), as the ledger's writes would have left them. Timed at the client, warm: per
 * project, per user, per queue, one project's users, and a member who sees two projects. Beside
 * it, what the ledger costs a job's end: its row and the rollups' upserts, as the controller
 * writes them.
 */
import BetterSqlite3 from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  addUsage,
  dailyUsage,
  hourlyUsage,
  HOUR_MS,
  noUsage,
  type Allocation,
  type AllocationOutcome,
  type HourlyUsage,
  type UsageCounts,
} from '../src/domain/usage.js';
import { GroupCommit } from '../src/store/group-commit.js';
import { COUNT_COLUMNS, counterValues, recordAllocation } from '../src/store/queries/usage.js';
import { openSqliteStore } from '../src/store/sqlite.js';
import { fmt, get, post, random, startBenchServer } from './lib.js';

const ALLOCATIONS = 1_000_000;
const PROJECTS = 20;
const USERS = 50;
const QUEUES = 3;
const DAYS = 30;
const RUNS = 7;

export interface UsageBenchResult {
  allocations: number;
  hourlyRows: number;
  resourceRows: number;
  dailyRows: number;
  seedSeconds: number;
  /** What the ledger and rollups add to a job's end: µs per allocation, written as the controller does. */
  writeMicros: number;
  /** Per query: the median answer time, ms, and the rows it answered. */
  queries: { name: string; ms: number; rows: number }[];
}

const OUTCOMES: AllocationOutcome[] = [
  'succeeded',
  'succeeded',
  'succeeded',
  'failed',
  'cancelled',
  'retried',
];

/** A rollup row: its key, and its sums. */
type Row = { hour: number; project: string; user: string; queue: string } & UsageCounts;

/** One grain's rollups in memory, by hour (or day) and key. */
class Rollups {
  readonly rows = new Map<string, Row>();

  add(a: Allocation, pieces: HourlyUsage[]): void {
    for (const h of pieces) {
      const key = `${h.hour}\t${a.project}\t${a.user}\t${a.queue}`;
      let row = this.rows.get(key);
      if (!row)
        this.rows.set(
          key,
          (row = { hour: h.hour, project: a.project, user: a.user, queue: a.queue, ...noUsage() }),
        );
      addUsage(row, h);
    }
  }
}

/** An allocation `i` of the generated workload, ending in the DAYS before `now`. */
function allocation(i: number, rand: () => number, now: number): Allocation {
  const p = i % PROJECTS;
  const queuedAt = now - DAYS * 24 * HOUR_MS + Math.floor(rand() * (DAYS * 24 - 5) * HOUR_MS);
  const admittedAt = queuedAt + Math.floor(rand() * 600_000);
  return {
    jobId: i + 1,
    attempt: 1,
    project: `project-${p}`,
    name: 'train',
    user: `user-${Math.floor(rand() * USERS)}`,
    queue: `queue-${p % QUEUES}`,
    target: 'local',
    workerId: null,
    workers: 1,
    requests: {},
    queuedAt,
    admittedAt,
    startedAt: admittedAt,
    endedAt: admittedAt + 60_000 + Math.floor(rand() * rand() * 4 * HOUR_MS),
    outcome: OUTCOMES[i % OUTCOMES.length]!,
    final: true,
  };
}

const amountsOf = (i: number) => ({ cpu: 1000 * (1 + (i % 8)), memory: 2 ** 30 * (1 + (i % 16)) });

/** The rollups (hourly, daily) of ALLOCATIONS allocations ending in the DAYS before `now`. */
function rollups(now: number): Record<'hourly' | 'daily', Rollups> {
  const rand = random(16);
  const grains = { hourly: new Rollups(), daily: new Rollups() };
  for (let i = 0; i < ALLOCATIONS; i++) {
    const a = allocation(i, rand, now);
    const amounts = amountsOf(i);
    const hours = hourlyUsage(a, amounts);
    grains.hourly.add(a, hours);
    grains.daily.add(a, dailyUsage(hours));
  }
  return grains;
}

/** Writes the rollups into the server's SQLite file, in one transaction. */
function seed(
  dataDir: string,
  now: number,
): Pick<UsageBenchResult, 'hourlyRows' | 'resourceRows' | 'dailyRows'> {
  const grains = rollups(now);
  const db = new BetterSqlite3(join(dataDir, 'berth.db'));
  try {
    db.pragma('busy_timeout = 10000');
    db.transaction(() => {
      for (const [grain, r] of Object.entries(grains)) {
        const toCounts = db.prepare(
          `INSERT INTO usage_${grain} (${COUNT_COLUMNS.join(', ')}) VALUES (${COUNT_COLUMNS.map(() => '?').join(', ')})`,
        );
        const toResources = db.prepare(
          `INSERT INTO usage_${grain}_resources (hour, project, user_name, queue, resource, amount_seconds)
           VALUES (?, ?, ?, ?, ?, ?)`,
        );
        for (const row of r.rows.values()) {
          const key = [row.hour, row.project, row.user, row.queue];
          toCounts.run(...key, ...counterValues(row));
          for (const [resource, v] of Object.entries(row.resources)) toResources.run(...key, resource, v);
        }
      }
    })();
    const resources = (r: Rollups) =>
      [...r.rows.values()].reduce((n, x) => n + Object.keys(x.resources).length, 0);
    return {
      hourlyRows: grains.hourly.rows.size,
      resourceRows: resources(grains.hourly),
      dailyRows: grains.daily.rows.size,
    };
  } finally {
    db.close();
  }
}

/** `a` as a job of the pipeline ends: admitted a second ago, ending now. */
const endingNow = (a: Allocation, now: number): Allocation => ({
  ...a,
  queuedAt: now - 1500,
  admittedAt: now - 1000,
  startedAt: now - 900,
  endedAt: now,
});

/**
 * The ledger row and the rollups' upserts of WRITES allocations through a group commit on a SQLite
 * store of its own, 100 at a time (a busy turn's worth): µs per allocation.
 */
async function writeCost(now: number): Promise<number> {
  const WRITES = 20_000;
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-usage-'));
  const store = await openSqliteStore(join(dir, 'berth.db'));
  try {
    const commits = new GroupCommit(store);
    const rand = random(17);
    const t0 = performance.now();
    for (let i = 0; i < WRITES; i += 100)
      await Promise.all(
        Array.from({ length: 100 }, (_, k) =>
          commits.run((tx) =>
            recordAllocation(tx, endingNow(allocation(i + k, rand, now), now), amountsOf(i + k)),
          ),
        ),
      );
    return ((performance.now() - t0) * 1000) / WRITES;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The median of RUNS timed calls (after one untimed), and the rows answered. */
async function timed(api: string, token: string, path: string): Promise<{ ms: number; rows: number }> {
  let rows = (await get<{ rows: unknown[] }>(api, token, path)).rows.length;
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    rows = (await get<{ rows: unknown[] }>(api, token, path)).rows.length;
    times.push(performance.now() - t0);
  }
  return { ms: times.sort((a, b) => a - b)[Math.floor(RUNS / 2)]!, rows };
}

export async function runUsageBench(): Promise<UsageBenchResult> {
  const s = await startBenchServer('factories:\n  local: { kind: local, capacity: 2 }');
  try {
    await post(s.api, s.token, '/projects', { name: 'project-0', clusterQueue: 'default' });
    await post(s.api, s.token, '/projects', { name: 'project-1', clusterQueue: 'default' });
    const member = ((await post(s.api, s.token, '/users', { name: 'member' })) as { token: string }).token;
    for (const p of ['project-0', 'project-1'])
      await fetch(`${s.api}/projects/${p}/members/member`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ role: 'viewer' }),
      });
    const t0 = performance.now();
    const rows = seed(s.dataDir, Date.now());
    const seedSeconds = (performance.now() - t0) / 1000;
    const queries: UsageBenchResult['queries'] = [];
    for (const [name, path, token] of [
      ['30 days by project (admin)', '/usage?since=30d', s.token],
      ['30 days by user (admin)', '/usage?since=30d&by=user', s.token],
      ['30 days by queue (admin)', '/usage?since=30d&by=queue', s.token],
      ["one project's users, 30 days", '/usage?since=30d&by=user&project=project-7', s.token],
      ['one day by project (admin)', '/usage?since=1d', s.token],
      ['a member of 2 projects, 30 days', '/usage?since=30d', member],
    ] as const)
      queries.push({ name, ...(await timed(s.api, token, path)) });
    return {
      allocations: ALLOCATIONS,
      ...rows,
      seedSeconds,
      writeMicros: await writeCost(Date.now()),
      queries,
    };
  } finally {
    await s.stop();
  }
}

export function printUsageBench(r: UsageBenchResult): void {
  console.log(
    `  rollups of ${fmt(r.allocations)} allocations: ${fmt(r.hourlyRows)} hourly rows (and ${fmt(r.resourceRows)} per resource), ${fmt(r.dailyRows)} daily rows (made and written in ${fmt(r.seedSeconds, 1)} s)`,
  );
  console.log(
    `  written at a job's end (its ledger row and the hourly and daily upserts, 100 per group commit, SQLite): ${fmt(r.writeMicros)} µs per allocation`,
  );
  const width = Math.max(...r.queries.map((q) => q.name.length));
  for (const q of r.queries)
    console.log(
      `  GET /usage, ${q.name.padEnd(width)}  ${fmt(q.ms, 1)} ms (median of ${RUNS}), ${q.rows} rows`,
    );
}
