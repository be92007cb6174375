/**
 * The usage ledger and its rollups, hourly and daily (migration 0017; domain/usage.ts). `recordAllocation`
 * is called inside the transaction of the state change that ends the allocation, so that a crash
 * loses or keeps both; the unique `(job_id, attempt)` makes a second write of one allocation fail
 * rather than count twice. Reports read the rollups only.
 */
import { sql, type SelectQueryBuilder } from 'kysely';
import type { Amounts } from '../../domain/quantity.js';
import { dictionary } from '../../domain/names.js';
import {
  addUsage,
  dailyUsage,
  hourlyUsage,
  periodSpans,
  type Allocation,
  type AllocationOutcome,
  type HourlyUsage,
  type UsageCounts,
  type UsageGrouping,
  type UsagePeriod,
} from '../../domain/usage.js';
import type { Database } from '../schema.js';
import type { Db, Dialect } from '../store.js';
import { insertRows } from './bulk-insert.js';
import { dialectOf, quoted } from './statement-text.js';

type Counter =
  | 'allocations'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'requeued'
  | 'retried'
  | 'wait_ms_sum'
  | 'wait_count'
  | 'held_ms';

const COUNTERS: Counter[] = [
  'allocations',
  'succeeded',
  'failed',
  'cancelled',
  'requeued',
  'retried',
  'wait_ms_sum',
  'wait_count',
  'held_ms',
];

type Grain = 'hourly' | 'daily';

const KEY = ['hour', 'project', 'user_name', 'queue'];

const LEDGER_COLUMNS = [
  'job_id',
  'attempt',
  'project',
  'name',
  'user_name',
  'queue',
  'target',
  'worker_id',
  'workers',
  'requests',
  'queued_at',
  'admitted_at',
  'started_at',
  'ended_at',
  'outcome',
  'final',
];

/** `ON CONFLICT` of a rollup table: each sum adds the new row's; the maximum keeps the larger. */
function addUp(table: string, key: string[], sums: string[], maxima: string[] = []): string {
  const add = sums.map((c) => `${quoted(c)} = ${quoted(table)}.${quoted(c)} + excluded.${quoted(c)}`);
  // Portable: SQLite spells the larger of two max(a, b), PostgreSQL greatest(a, b).
  const max = maxima.map(
    (c) =>
      `${quoted(c)} = CASE WHEN excluded.${quoted(c)} > ${quoted(table)}.${quoted(c)} THEN excluded.${quoted(c)} ELSE ${quoted(table)}.${quoted(c)} END`,
  );
  return ` ON CONFLICT (${key.map(quoted).join(', ')}) DO UPDATE SET ${[...add, ...max].join(', ')}`;
}

/** A rollup row's columns: its key, its sums (COUNTERS), its maximum. */
export const COUNT_COLUMNS = [...KEY, ...COUNTERS, 'wait_ms_max'];
const RESOURCE_COLUMNS = [...KEY, 'resource', 'amount_seconds'];

/** The values of a piece's sums in COUNTERS' order, then its maximum (COUNT_COLUMNS after the key). */
export const counterValues = (h: UsageCounts): number[] => [
  h.allocations,
  h.succeeded,
  h.failed,
  h.cancelled,
  h.requeued,
  h.retried,
  h.waitMsSum,
  h.waitCount,
  h.heldMs,
  h.waitMsMax,
];

/** Each grain's tables, and what their upserts do on a conflict. */
const ROLLUPS = Object.fromEntries(
  (['hourly', 'daily'] as const).map((grain) => {
    const [counts, resources] = [`usage_${grain}`, `usage_${grain}_resources`];
    return [
      grain,
      {
        counts: { table: counts, conflict: addUp(counts, KEY, COUNTERS, ['wait_ms_max']) },
        resources: { table: resources, conflict: addUp(resources, [...KEY, 'resource'], ['amount_seconds']) },
      },
    ];
  }),
) as Record<Grain, Record<'counts' | 'resources', { table: string; conflict: string }>>;

/** Adds `pieces` (one per hour, or per day) of one project, user and queue to a grain's rollups. */
async function addToRollups(db: Db, dialect: Dialect, grain: Grain, pieces: HourlyUsage[], who: string[]) {
  const { counts, resources } = ROLLUPS[grain];
  // Each hour once per statement: PostgreSQL refuses an upsert that meets one row twice.
  const rows = pieces.map((h) => [h.hour, ...who, ...counterValues(h)]);
  await insertRows(db, dialect, counts.table, COUNT_COLUMNS, rows, counts.conflict);
  // Only numbers go into amount_seconds: SQLite would keep text there, and every report that
  // summed it would fail (issue #40).
  const amounts = pieces.flatMap((h) =>
    Object.entries(h.resources)
      .filter(([, amountSeconds]) => typeof amountSeconds === 'number' && Number.isFinite(amountSeconds))
      .map(([resource, amountSeconds]) => [h.hour, ...who, resource, amountSeconds]),
  );
  await insertRows(db, dialect, resources.table, RESOURCE_COLUMNS, amounts, resources.conflict);
}

/**
 * Writes ended allocation `a` into the ledger and adds it to the rollups, hourly and daily.
 * `amounts`: what it held against quota in all (every worker's requests; `jobs` is left out).
 */
export async function recordAllocation(db: Db, a: Allocation, amounts: Amounts): Promise<void> {
  const dialect = dialectOf(db);
  await insertRows(db, dialect, 'usage_ledger', LEDGER_COLUMNS, [
    [
      a.jobId,
      a.attempt,
      a.project,
      a.name,
      a.user,
      a.queue,
      a.target,
      a.workerId,
      a.workers,
      JSON.stringify(a.requests),
      a.queuedAt,
      a.admittedAt,
      a.startedAt,
      a.endedAt,
      a.outcome,
      a.final ? 1 : 0,
    ],
  ]);
  const hours = hourlyUsage(a, amounts);
  const who = [a.project, a.user, a.queue];
  await addToRollups(db, dialect, 'hourly', hours, who);
  await addToRollups(db, dialect, 'daily', dailyUsage(hours), who);
}

/** The ledger's rows, oldest first: all, or one job's. */
export async function listAllocations(db: Db, jobId?: number): Promise<Allocation[]> {
  let q = db.selectFrom('usage_ledger').selectAll();
  if (jobId !== undefined) q = q.where('job_id', '=', jobId);
  const rows = await q.orderBy('id').execute();
  const orNull = (v: number | string | null): number | null => (v === null ? null : Number(v));
  return rows.map((r) => ({
    jobId: Number(r.job_id),
    attempt: r.attempt,
    project: r.project,
    name: r.name,
    user: r.user_name,
    queue: r.queue,
    target: r.target,
    workerId: orNull(r.worker_id),
    workers: r.workers,
    requests: JSON.parse(r.requests) as Record<string, string>,
    queuedAt: Number(r.queued_at),
    admittedAt: orNull(r.admitted_at),
    startedAt: orNull(r.started_at),
    endedAt: Number(r.ended_at),
    outcome: r.outcome as AllocationOutcome,
    final: r.final === 1,
  }));
}

export interface UsageQuery {
  /** Hours `since` ≤ hour < `until` (epoch ms, on hour boundaries). */
  since: number;
  until: number;
  by: UsageGrouping;
  /** Only these projects; undefined: all. */
  projects?: string[];
}

const KEY_COLUMN = { project: 'project', user: 'user_name', queue: 'queue' } as const;

type Sums = { key: string } & UsageCounts;

/** One grain's sums per key over `spans` (served by the key's leading `hour`). */
async function sumGrain(db: Db, grain: Grain, spans: UsagePeriod[], q: UsageQuery): Promise<Sums[]> {
  if (spans.length === 0) return [];
  const key = KEY_COLUMN[q.by];
  const sum = (c: Counter) => sql<number | string>`sum(${sql.ref(c)})`.as(c);
  const within = <
    T extends SelectQueryBuilder<Database, `usage_${Grain}` | `usage_${Grain}_resources`, object>,
  >(
    query: T,
  ): T =>
    query
      .where((eb) => eb.or(spans.map((p) => eb.and([eb('hour', '>=', p.since), eb('hour', '<', p.until)]))))
      .$if(q.projects !== undefined, (qb) => qb.where('project', 'in', q.projects!)) as T;
  const counts = within(
    db
      .selectFrom(`usage_${grain}`)
      .select([
        sql.ref<string>(key).as('key'),
        ...COUNTERS.map(sum),
        sql<number | string>`max(wait_ms_max)`.as('wait_ms_max'),
      ]),
  );
  const resources = within(
    db
      .selectFrom(`usage_${grain}_resources`)
      .select([
        sql.ref<string>(key).as('key'),
        'resource',
        sql<number | string>`sum(amount_seconds)`.as('amount_seconds'),
      ]),
  );
  const [rows, amounts] = await Promise.all([
    counts.groupBy(key).execute(),
    resources.groupBy([key, 'resource']).execute(),
  ]);
  const out = new Map<string, Sums>();
  for (const r of rows) {
    const n = (c: Counter | 'wait_ms_max') => Number(r[c] ?? 0);
    out.set(r.key, {
      key: r.key,
      allocations: n('allocations'),
      succeeded: n('succeeded'),
      failed: n('failed'),
      cancelled: n('cancelled'),
      requeued: n('requeued'),
      retried: n('retried'),
      waitMsSum: n('wait_ms_sum'),
      waitCount: n('wait_count'),
      waitMsMax: n('wait_ms_max'),
      heldMs: n('held_ms'),
      resources: dictionary<number>(),
    });
  }
  for (const r of amounts) {
    const row = out.get(r.key);
    if (row) row.resources[r.resource] = Number(r.amount_seconds);
  }
  return [...out.values()];
}

/**
 * The rollups' sums per key over the query's hours: its whole UTC days from the daily rollups,
 * the hours at either end from the hourly ones.
 */
export async function sumUsage(db: Db, q: UsageQuery): Promise<Sums[]> {
  if (q.projects?.length === 0) return [];
  const { days, hours } = periodSpans(q);
  const out = new Map<string, Sums>();
  for (const part of await Promise.all([sumGrain(db, 'daily', days, q), sumGrain(db, 'hourly', hours, q)]))
    for (const s of part) {
      const seen = out.get(s.key);
      if (seen) addUsage(seen, s);
      else out.set(s.key, s);
    }
  return [...out.values()];
}

/** A run that went to its own end (or its timeout), as start-time estimates learn from it. */
export interface PastRun {
  project: string;
  name: string;
  target: string;
  queue: string;
  ms: number;
}

/** The last `limit` runs that ended on their own, oldest first: the runtime history after a restart. */
export async function recentRuns(db: Db, limit: number): Promise<PastRun[]> {
  const rows = await db
    .selectFrom('usage_ledger')
    .select(['project', 'name', 'target', 'queue', 'started_at', 'ended_at'])
    .where('outcome', 'in', ['succeeded', 'failed', 'retried'])
    .where('started_at', 'is not', null)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.reverse().map((r) => ({
    project: r.project,
    name: r.name,
    target: r.target,
    queue: r.queue,
    ms: Number(r.ended_at) - Number(r.started_at),
  }));
}
