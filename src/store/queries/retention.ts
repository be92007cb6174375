/**
 * What the retention sweep (service/upkeep/retention.ts) reads and removes, a batch at a time, and the
 * ranges of removed job ids it leaves behind (migration 0019) so that a removed job can say why it
 * is gone.
 */
import { TERMINAL_STATES } from '../../domain/job.js';
import type { Db } from '../store.js';

/** A job the sweep looked at, in id order. */
export interface SweptJob {
  id: number;
  /** Ended, cleaned up, and before the cut-off: to be removed. */
  expired: boolean;
  finishedAt: number | null;
  createdAt: number;
}

/**
 * Up to `limit` jobs after id `after`, in id order, each marked whether it ended (and was cleaned
 * up) before `cutoff`. The sweep walks ids from the oldest job up, and stops at the first job
 * created after the cut-off: no later one can have ended before it.
 */
export async function jobsAfter(db: Db, after: number, cutoff: number, limit: number): Promise<SweptJob[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['id', 'state', 'cleaned_up', 'finished_at', 'created_at'])
    .where('id', '>', after)
    .orderBy('id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    expired:
      TERMINAL_STATES.has(r.state as never) &&
      r.cleaned_up === 1 &&
      r.finished_at !== null &&
      Number(r.finished_at) < cutoff,
    finishedAt: r.finished_at === null ? null : Number(r.finished_at),
    createdAt: Number(r.created_at),
  }));
}

/**
 * Removes jobs `ids` (ended before `cutoff`) and every row of theirs: events, attempts, logs kept
 * in rows, workers and resource instances that are gone, artifacts' rows, job tokens. The usage
 * ledger is left to its own retention; its rollups are never removed.
 */
export async function deleteJobs(db: Db, ids: number[], cutoff: number): Promise<number> {
  if (ids.length === 0) return 0;
  for (const table of ['events', 'job_attempts', 'job_logs', 'job_artifacts', 'api_tokens'] as const)
    await db.deleteFrom(table).where('job_id', 'in', ids).execute();
  for (const table of ['workers', 'resource_instances'] as const)
    await db
      .deleteFrom(table)
      .where('job_id', 'in', ids)
      .where('state', 'in', ['destroyed', 'failed'])
      .execute();
  const result = await db
    .deleteFrom('jobs')
    .where('id', 'in', ids)
    .where('cleaned_up', '=', 1)
    .where('finished_at', '<', cutoff)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Consecutive removed ids (no job left between them), the span of their ends, and their retention. */
export interface RemovedRange {
  firstId: number;
  lastId: number;
  endedFrom: number;
  endedTo: number;
  retentionSeconds: number;
}

const toRange = (r: {
  first_id: number | string;
  last_id: number | string;
  ended_from: number | string;
  ended_to: number | string;
  retention_seconds: number | string;
}): RemovedRange => ({
  firstId: Number(r.first_id),
  lastId: Number(r.last_id),
  endedFrom: Number(r.ended_from),
  endedTo: Number(r.ended_to),
  retentionSeconds: Number(r.retention_seconds),
});

/** Whether any job is left with an id strictly between `a` and `b`. */
async function jobsBetween(db: Db, a: number, b: number): Promise<boolean> {
  if (b - a <= 1) return false;
  const row = await db
    .selectFrom('jobs')
    .select('id')
    .where('id', '>', a)
    .where('id', '<', b)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Records range `r` as removed, merged with the range before it and the one after it when no job
 * is left between them and they were kept as long: the table holds a row per stretch of removed
 * ids, split only where a job remains (one still running, or not old enough yet).
 */
export async function recordRemoved(db: Db, r: RemovedRange, now: number): Promise<void> {
  let range = { ...r };
  const before = await db
    .selectFrom('removed_jobs')
    .selectAll()
    .where('first_id', '<', range.firstId)
    .orderBy('first_id', 'desc')
    .limit(1)
    .executeTakeFirst();
  const after = await db
    .selectFrom('removed_jobs')
    .selectAll()
    .where('first_id', '>', range.lastId)
    .orderBy('first_id')
    .limit(1)
    .executeTakeFirst();
  for (const row of [before, after]) {
    if (!row) continue;
    const other = toRange(row);
    if (other.retentionSeconds !== range.retentionSeconds) continue;
    const [lo, hi] = other.firstId < range.firstId ? [other, range] : [range, other];
    if (await jobsBetween(db, lo.lastId, hi.firstId)) continue;
    await db.deleteFrom('removed_jobs').where('first_id', '=', other.firstId).execute();
    range = {
      firstId: lo.firstId,
      lastId: hi.lastId,
      endedFrom: Math.min(lo.endedFrom, hi.endedFrom),
      endedTo: Math.max(lo.endedTo, hi.endedTo),
      retentionSeconds: range.retentionSeconds,
    };
  }
  await db
    .insertInto('removed_jobs')
    .values({
      first_id: range.firstId,
      last_id: range.lastId,
      ended_from: range.endedFrom,
      ended_to: range.endedTo,
      retention_seconds: range.retentionSeconds,
      removed_at: now,
    })
    .execute();
}

/** The removed range holding job `id`, if the sweep removed it. */
export async function removedRangeOf(db: Db, id: number): Promise<RemovedRange | undefined> {
  const row = await db
    .selectFrom('removed_jobs')
    .selectAll()
    .where('first_id', '<=', id)
    .orderBy('first_id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row && Number(row.last_id) >= id ? toRange(row) : undefined;
}

/**
 * Removes up to `limit` of the oldest audit rows written before `cutoff`; returns how many. The
 * log is walked in id order, which is the order of `at` (rows are written as changes commit), so
 * that no index on `at` is needed: it stops at the first row within the retention.
 */
export async function deleteOldAudit(db: Db, cutoff: number, limit: number): Promise<number> {
  const rows = await db.selectFrom('audit_log').select(['id', 'at']).orderBy('id').limit(limit).execute();
  const stop = rows.findIndex((r) => Number(r.at) >= cutoff);
  const old = stop < 0 ? rows : rows.slice(0, stop);
  if (old.length === 0) return 0;
  await db
    .deleteFrom('audit_log')
    .where('id', '<=', Number(old.at(-1)!.id))
    .where('at', '<', cutoff)
    .execute();
  return old.length;
}

/**
 * Removes up to `limit` of the usage ledger's allocations that ended before `cutoff` (through its
 * index on `ended_at`); returns how many. The rollups stay, so usage reports do not change.
 */
export async function deleteOldAllocations(db: Db, cutoff: number, limit: number): Promise<number> {
  const rows = await db
    .selectFrom('usage_ledger')
    .select('id')
    .where('ended_at', '<', cutoff)
    .orderBy('ended_at')
    .limit(limit)
    .execute();
  if (rows.length === 0) return 0;
  await db
    .deleteFrom('usage_ledger')
    .where(
      'id',
      'in',
      rows.map((r) => Number(r.id)),
    )
    .execute();
  return rows.length;
}

/**
 * About the highest id created before `cutoff`: where the sweep's walk will end, for its
 * progress lines. Ids are handed out in the order jobs are created, so a binary search over
 * them, a primary-key lookup per step (a few dozen at most), finds it without a scan; on
 * PostgreSQL, where replicas' clocks may differ a little, it is an estimate. Null without jobs.
 */
export async function lastIdCreatedBefore(db: Db, cutoff: number): Promise<number | null> {
  const at = (id: number) =>
    db
      .selectFrom('jobs')
      .select(['id', 'created_at'])
      .where('id', '>=', id)
      .orderBy('id')
      .limit(1)
      .executeTakeFirst()
      .then((r) => r && { id: Number(r.id), createdAt: Number(r.created_at) });
  const first = await at(0);
  if (!first || first.createdAt >= cutoff) return null;
  const top = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  // Invariant: `low` is an id created before the cut-off; every id above `high` is after it.
  let low = first.id;
  let high = Number(top?.id ?? low);
  while (low < high) {
    const next = await at(Math.floor((low + high + 1) / 2));
    if (next && next.createdAt < cutoff) low = next.id;
    else high = Math.floor((low + high + 1) / 2) - 1;
  }
  return low;
}
