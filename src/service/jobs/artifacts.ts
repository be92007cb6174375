/**
 * Jobs' artifacts: a running job's agent uploads the files its patterns matched (within the
 * per-run limit), whoever may read the job's logs lists and downloads them, and the leader removes
 * them once their job ended longer ago than the retention. Rows in the store, bytes on disk
 * (store/artifact-files.ts).
 */
import type { Readable } from 'node:stream';
import {
  checkArtifactName,
  DEFAULT_MAX_ARTIFACT_FILES,
  formatBytes,
  type ArtifactView,
} from '../../domain/artifact.js';
import { decodeArtifactCursor, encodeArtifactCursor } from '../../domain/artifact-cursor.js';
import { ConflictError, NotFoundError, PayloadTooLargeError } from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import { OverLimit } from '../../store/artifact-files.js';
import {
  countArtifacts,
  deleteArtifactsOf,
  endedBefore,
  expiredArtifactJobs,
  findArtifact,
  keptByRun,
  listArtifacts,
  recordArtifact,
} from '../../store/queries/artifacts.js';
import { type ServiceContext, type With } from '../context.js';
import { visibleJob } from './jobs.js';
import { scheduleLeaderSweeps } from '../upkeep/leader-sweeps.js';

/** Filesystem errors of a name that is a file in one upload and a directory in another. */
const CLASHES = new Set(['ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY']);

/**
 * One upload from job `jobId`'s agent (its token is the caller): streams `body` to disk, counting
 * its bytes against the run's limit, and records it. `length` is the declared Content-Length,
 * when there is one: a file that cannot fit is refused before any of it is read.
 */
export async function uploadArtifact(
  ctx: With<'runtime'>,
  jobId: number,
  name: string,
  body: Readable,
  length: number | undefined,
): Promise<ArtifactView> {
  checkArtifactName(name);
  const rt = ctx.runtime;
  const attempt = rt.controller.artifactAttempt(jobId);
  // One upload of a job at a time, so that two cannot both fit in the room left for one.
  return oneAtATime(ctx, jobId, async () => {
    const { files, maxBytesPerJob: max, maxFilesPerJob = DEFAULT_MAX_ARTIFACT_FILES } = rt.artifacts;
    const kept = await keptByRun(ctx.store.db, jobId, attempt, name);
    // Counted apart from the bytes: each file is a row and a file on disk, empty or not. (Again
    // with a name it keeps replaces that file, so it is left out of the count.)
    if (kept.files >= maxFilesPerJob)
      throw new PayloadTooLargeError(
        `over the job's limit of ${maxFilesPerJob} files per run (artifacts.maxFilesPerJob): it keeps ${kept.files} already`,
      );
    const room = Math.max(0, max - kept.bytes);
    const limit = `over the job's limit of ${formatBytes(max)} per run (artifacts.maxBytesPerJob)`;
    if (length !== undefined && length > room)
      throw new PayloadTooLargeError(
        `${limit}: its ${formatBytes(length)} would make ${formatBytes(kept.bytes + length)}`,
      );
    let written;
    try {
      written = await files.write(jobId, attempt, name, body, room);
    } catch (e) {
      if (e instanceof OverLimit)
        throw new PayloadTooLargeError(`${limit}: it is larger than the ${formatBytes(room)} left`);
      if (CLASHES.has((e as NodeJS.ErrnoException).code ?? ''))
        throw new ConflictError(
          `artifact ${JSON.stringify(name)} clashes with another of this run: one path cannot be both a file and a directory`,
        );
      throw e;
    }
    return recordArtifact(ctx.store.db, { jobId, attempt, name, ...written, createdAt: ctx.now() });
  });
}

export interface ArtifactPage {
  artifacts: ArtifactView[];
  /** The job's artifacts, all runs and pages together. */
  total: number;
  /** Where the next page starts; absent on the last page. */
  nextCursor?: string;
}

/** A page of a job's artifacts (100 unless `limit` says), for whoever may read its logs. */
export async function jobArtifacts(
  ctx: ServiceContext,
  p: Principal,
  jobId: number,
  q: { limit?: number; cursor?: string } = {},
): Promise<ArtifactPage> {
  await visibleJob(ctx, p, jobId);
  const db = ctx.store.db;
  const limit = q.limit ?? 100;
  const after = q.cursor === undefined ? undefined : decodeArtifactCursor(q.cursor);
  // One more than asked: whether it exists says whether there is a next page.
  const rows = await listArtifacts(db, jobId, { after, limit: limit + 1 });
  const artifacts = rows.slice(0, limit);
  const last = artifacts.at(-1);
  return {
    artifacts,
    total: await countArtifacts(db, jobId),
    nextCursor: rows.length > limit && last ? encodeArtifactCursor(last) : undefined,
  };
}

/** An artifact to download: run `attempt`'s, else the latest run's that kept one of that name. */
export async function openArtifact(
  ctx: With<'runtime'>,
  p: Principal,
  jobId: number,
  name: string,
  attempt?: number,
): Promise<{ artifact: ArtifactView; body: Readable }> {
  await visibleJob(ctx, p, jobId);
  checkArtifactName(name);
  const run = attempt === undefined ? '' : ` from run ${attempt}`;
  const artifact = await findArtifact(ctx.store.db, jobId, name, attempt);
  if (!artifact)
    throw new NotFoundError(
      `job ${jobId} has no artifact ${JSON.stringify(name)}${run} (berth artifacts ${jobId} lists them)`,
    );
  const file = await ctx.runtime.artifacts.files.open(jobId, artifact.attempt, name);
  if (!file)
    throw new NotFoundError(
      `artifact ${JSON.stringify(name)} of job ${jobId} is recorded, but its file is gone from the artifacts directory (is artifacts.dir shared by every replica?)`,
    );
  return { artifact, body: file.stream };
}

/** Jobs swept per query. */
const SWEEP_BATCH = 500;

/**
 * Removes the artifacts of jobs that ended more than the retention before `now`: files first,
 * then rows (a row whose file is gone answers 404; a file without its row could never be found
 * again). Then directories no row names (an upload cut off by a crash) of jobs as old. Returns
 * how many jobs' artifacts were removed.
 */
export async function sweepArtifacts(ctx: With<'runtime'>, now = ctx.now()): Promise<number> {
  const { files, retentionSeconds } = ctx.runtime.artifacts;
  const db = ctx.store.db;
  const cutoff = now - retentionSeconds * 1000;
  let removed = 0;
  for (;;) {
    const ids = await expiredArtifactJobs(db, cutoff, SWEEP_BATCH);
    for (const id of ids) await files.remove(id);
    await deleteArtifactsOf(db, ids);
    removed += ids.length;
    if (ids.length < SWEEP_BATCH) break;
  }
  const onDisk = await files.jobIds();
  for (let i = 0; i < onDisk.length; i += SWEEP_BATCH) {
    for (const id of await endedBefore(db, onDisk.slice(i, i + SWEEP_BATCH), cutoff)) await files.remove(id);
  }
  return removed;
}

/** How often the leader sweeps. */
export const SWEEP_EVERY_MS = 3_600_000;

/**
 * Sweeps at start and then every `everyMs`, on the leading replica only (alone on SQLite): the
 * directory is shared, one sweeper is enough. Returns the stop, which waits for a sweep under way.
 */
export function scheduleArtifactSweeps(
  ctx: With<'runtime'>,
  onError: (err: unknown) => void,
  everyMs = SWEEP_EVERY_MS,
): () => Promise<void> {
  return scheduleLeaderSweeps(ctx, () => sweepArtifacts(ctx), onError, everyMs);
}

/** Per server and job, the tail of its uploads' queue. */
const queues = new WeakMap<ServiceContext, Map<number, Promise<unknown>>>();

function oneAtATime<T>(ctx: ServiceContext, jobId: number, fn: () => Promise<T>): Promise<T> {
  let perJob = queues.get(ctx);
  if (!perJob) queues.set(ctx, (perJob = new Map<number, Promise<unknown>>()));
  const previous = perJob.get(jobId) ?? Promise.resolve();
  const mine = previous.then(fn, fn);
  const tail = mine.catch(() => undefined);
  perJob.set(jobId, tail);
  void tail.then(() => {
    if (perJob.get(jobId) === tail) perJob.delete(jobId);
  });
  return mine;
}
