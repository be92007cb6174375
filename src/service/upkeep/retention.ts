/**
 * Retention (`retention` of berth.yaml): the leader removes ended jobs older than `retention.jobs`
 * with everything of theirs (events, attempts, logs, artifacts), audit rows older than
 * `retention.audit`, and the usage ledger's allocations older than `retention.ledger` — never its
 * hourly and daily rollups, which every usage report reads, so reports stay exact. It works in
 * small batches, each its own short transaction sized to hold the store a few milliseconds
 * (batch-size.ts), and rests after each as long as it took (it never has more than half of the
 * store's time), so that submissions keep their latency while it runs. What stays of removed
 * jobs is a few ranges of ids (store/queries/retention.ts), so that asking for one says why it is
 * gone.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { NotFoundError } from '../../domain/errors.js';
import { BatchSize } from './batch-size.js';
import {
  deleteJobs,
  deleteOldAllocations,
  deleteOldAudit,
  jobsAfter,
  lastIdCreatedBefore,
  recordRemoved,
  removedRangeOf,
  type RemovedRange,
  type SweptJob,
} from '../../store/queries/retention.js';
import type { ServiceContext } from '../context.js';
import { scheduleLeaderSweeps } from './leader-sweeps.js';
import { forEachInParallel } from '../../store/parallel.js';
import { PROGRESS_EVERY_MS, SweepProgress } from './sweep-progress.js';
import type { Db, Store } from '../../store/store.js';
import type { RetainedKind } from '../../metrics/metrics.js';

/** `retention` of berth.yaml, in seconds; null: kept forever. */
export interface RetentionSettings {
  jobs: number | null;
  audit: number | null;
  ledger: number | null;
}

/**
 * What one batch (one transaction) may hold the store for (batch-size.ts), by store. After each
 * batch the sweep rests as long as the batch took (`rest`).
 *
 * - SQLite: a transaction holds the server's only connection, and every request waits for it. At
 *   4 ms and no rest, submissions' p99 during the sweep of a million jobs was 13.5 ms against 6.5
 *   ms without it on a quiet machine; at 2 ms with the rest, 7.8 against 7.7 (docs/PERFORMANCE.md).
 * - PostgreSQL: the pool's other connections serve requests during a batch, but each batch is a
 *   dozen round trips: at 2 ms a batch held ten jobs, and the sweep ran at 480 jobs/s. At 10 ms
 *   with the rest, 1,190 jobs/s and a p99 1.35x the quiet one's; at 25 ms and no rest, 3,660
 *   jobs/s and 1.8x: the database's CPU is the server's too.
 */
const BATCH_MS: Record<Store['dialect'], number> = { sqlite: 2, postgres: 10 };
/** Jobs looked at per batch, and audit or ledger rows removed per batch: the bounds. */
const jobBatches = (targetMs: number) => new BatchSize({ first: 50, min: 10, max: 1000, targetMs });
const rowBatches = (targetMs: number) => new BatchSize({ first: 200, min: 50, max: 5000, targetMs });
/** Artifact directories removed at once. */
const FILES_IN_FLIGHT = 8;

export interface SweepReport {
  jobs: number;
  audit: number;
  ledger: number;
}

/** The removable jobs of a page as ranges: consecutive ones, split where a job stays. */
function rangesOf(page: SweptJob[], retentionSeconds: number): RemovedRange[] {
  const out: RemovedRange[] = [];
  let open: RemovedRange | undefined;
  for (const j of page) {
    if (!j.expired) {
      open = undefined;
      continue;
    }
    const end = j.finishedAt!;
    if (open) {
      open.lastId = j.id;
      open.endedFrom = Math.min(open.endedFrom, end);
      open.endedTo = Math.max(open.endedTo, end);
    } else {
      open = { firstId: j.id, lastId: j.id, endedFrom: end, endedTo: end, retentionSeconds };
      out.push(open);
    }
  }
  return out;
}

/**
 * Removes ended jobs older than `retentionSeconds` before `now`: walks the jobs in id order, a
 * page at a time, up to the first created after the cut-off. Each page: its jobs' log files and
 * artifacts first (a row whose file is gone reads as empty; a file without its row could never be
 * found again), then their rows and the ranges that remember them, in one transaction.
 */
async function sweepJobs(
  ctx: ServiceContext,
  retentionSeconds: number,
  now: number,
  stopped: () => boolean,
  progress: SweepProgress,
): Promise<number> {
  const cutoff = now - retentionSeconds * 1000;
  const rt = ctx.runtime;
  const batches = jobBatches(BATCH_MS[ctx.store.dialect]);
  let removed = 0;
  for (let after = 0; !stopped();) {
    const size = batches.size;
    const page = await jobsAfter(ctx.store.db, after, cutoff, size);
    const ids = page.filter((j) => j.expired).map((j) => j.id);
    if (ids.length > 0) {
      // Files in parallel: one after another, their round trips took most of a batch's time; but
      // a few at a time (store/parallel.ts): a thousand started at once held the event loop.
      await Promise.all([
        rt?.logs.discard(ids),
        rt && forEachInParallel(ids, FILES_IN_FLIGHT, (id) => rt.artifacts.files.remove(id)),
      ]);
      const n = await batches.run(() =>
        ctx.store.transaction(async (tx) => {
          const n = await deleteJobs(tx, ids, cutoff);
          for (const r of rangesOf(page, retentionSeconds)) await recordRemoved(tx, r, now);
          return n;
        }),
      );
      removed += n;
      ctx.metrics?.retentionRemoved('jobs', n);
    }
    if (page.length < size || page.some((j) => j.createdAt >= cutoff)) return removed;
    after = page.at(-1)!.id;
    await progress.walked(ids.length, page[0]!.id, after);
    await rest(batches);
    await ctx.store.settle?.();
  }
  return removed;
}

/**
 * Between two batches: as long as the last one held the store, so that the sweep has at most half
 * of it (SQLite's only connection; PostgreSQL's CPU and disk, which the server's requests share),
 * and a request that came during a batch finds the store free once it is over.
 */
const rest = (batches: BatchSize) => delay(batches.lastMs);

/** Runs `batch` until it removes less than a whole batch, resting between batches; the total. */
async function inBatches(
  targetMs: number,
  batch: (limit: number) => Promise<number>,
  stopped: () => boolean,
  settle: (() => Promise<void>) | undefined,
): Promise<number> {
  const batches = rowBatches(targetMs);
  let total = 0;
  while (!stopped()) {
    const limit = batches.size;
    const n = await batches.run(batch);
    total += n;
    if (n < limit) return total;
    await rest(batches);
    await settle?.();
  }
  return total;
}

export interface SweepOptions {
  /** The sweep's clock (the tests set it): what is older than a retention before it goes. */
  now?: number;
  /** Whether the server is stopping: the sweep then ends early, between two batches. */
  stopped?: () => boolean;
  /** Where a long sweep says how far it has come (sweep-progress.ts); nowhere by default. */
  say?: (line: string) => void;
  /** How often it says so. */
  progressEveryMs?: number;
}

/** One sweep: what it removed of each kind. */
export async function sweepRetention(
  ctx: ServiceContext,
  settings: RetentionSettings,
  options: SweepOptions = {},
): Promise<SweepReport> {
  const { now = ctx.now(), say, progressEveryMs = PROGRESS_EVERY_MS } = options;
  // Cut short: the last answer of `stopped` was yes (a walk that ends by itself asked it last
  // before its last batch, and heard no).
  let cut = false;
  const stopped = () => (cut = options.stopped?.() ?? false);
  const db = ctx.store.db;
  const settle = ctx.store.settle?.bind(ctx.store);
  const targetMs = BATCH_MS[ctx.store.dialect];
  const before = (seconds: number) => now - seconds * 1000;
  const { jobs, audit, ledger } = settings;
  /** Rows of `kind` older than `seconds`, removed a batch at a time by `remove` and counted. */
  const rows = async (
    kind: 'audit' | 'ledger',
    seconds: number | null,
    remove: (db: Db, cutoff: number, limit: number) => Promise<number>,
  ): Promise<number> => {
    if (seconds === null) return 0;
    const batch = async (limit: number) => {
      const n = await remove(db, before(seconds), limit);
      ctx.metrics?.retentionRemoved(kind, n);
      return n;
    };
    return inBatches(targetMs, batch, stopped, settle);
  };
  const progress = new SweepProgress({
    say: say ?? (() => {}),
    everyMs: say ? progressEveryMs : Infinity,
    clock: () => performance.now(),
    last: () => (jobs === null ? Promise.resolve(null) : lastIdCreatedBefore(db, before(jobs))),
  });
  /** A kind swept through to its end (not cut short): what an alert on a sweep falling behind watches. */
  const through = <T>(kind: RetainedKind, seconds: number | null, n: T): T => {
    if (seconds !== null && !cut) ctx.metrics?.retentionSwept(kind, ctx.now());
    return n;
  };
  const removed = {
    jobs: through('jobs', jobs, jobs === null ? 0 : await sweepJobs(ctx, jobs, now, stopped, progress)),
    audit: through('audit', audit, await rows('audit', audit, deleteOldAudit)),
    ledger: through('ledger', ledger, await rows('ledger', ledger, deleteOldAllocations)),
  };
  progress.ended(removed, cut);
  return removed;
}

/** How often the leader sweeps. */
export const RETENTION_EVERY_MS = 3_600_000;

/**
 * Sweeps at start and then hourly, on the leader only; nothing at all when everything is kept
 * forever. A long sweep says how far it has come with `say`.
 */
export function scheduleRetentionSweeps(
  ctx: ServiceContext,
  settings: RetentionSettings,
  onError: (err: unknown) => void,
  say: (line: string) => void,
): () => Promise<void> {
  if (settings.jobs === null && settings.audit === null && settings.ledger === null) return async () => {};
  const kinds = (['jobs', 'audit', 'ledger'] as const).filter((k) => settings[k] !== null);
  ctx.metrics?.retentionKept(kinds);
  return scheduleLeaderSweeps(
    ctx,
    (stopped) => sweepRetention(ctx, settings, { stopped, say }),
    onError,
    RETENTION_EVERY_MS,
  );
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** `90 days`, `36 hours`, `1 year`: how long a removed job was kept. */
export function describeRetention(seconds: number): string {
  const units: [string, number][] = [
    ['year', 365 * 86_400],
    ['day', 86_400],
    ['hour', 3_600],
    ['minute', 60],
  ];
  const [unit, size] = units.find(([, s]) => seconds % s === 0) ?? ['second', 1];
  const n = seconds / size;
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** Why job `id` is not found: removed by the retention (when it was), else a plain not found. */
export async function missingJob(ctx: ServiceContext, id: number): Promise<NotFoundError> {
  const r = await removedRangeOf(ctx.store.db, id);
  if (!r) return new NotFoundError(`job ${id} not found`);
  const ended =
    day(r.endedFrom) === day(r.endedTo)
      ? `ended on ${day(r.endedTo)}`
      : `ended between ${day(r.endedFrom)} and ${day(r.endedTo)}`;
  return new NotFoundError(
    `job ${id} ${ended} and was removed after ${describeRetention(r.retentionSeconds)}`,
  );
}
