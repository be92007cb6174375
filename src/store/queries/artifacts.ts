/** Jobs' artifacts (migration 0015): a row per kept file; the bytes are on disk (artifact-files.ts). */
import { sql } from 'kysely';
import type { ArtifactView } from '../../domain/artifact.js';
import type { ArtifactKey } from '../../domain/artifact-cursor.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

export interface ArtifactRecord {
  jobId: number;
  attempt: number;
  name: string;
  size: number;
  sha256: string;
  /** Epoch ms. */
  createdAt: number;
}

interface Row {
  attempt: number | string;
  name: string;
  size: number | string;
  sha256: string;
  created_at: number | string;
}

const toView = (r: Row): ArtifactView => ({
  name: r.name,
  attempt: Number(r.attempt),
  size: Number(r.size),
  sha256: r.sha256,
  createdAt: iso(r.created_at),
});

/** Records a kept file; a second upload of the same name in the same run replaces the first. */
export async function recordArtifact(db: Db, a: ArtifactRecord): Promise<ArtifactView> {
  const values = { size: a.size, sha256: a.sha256, created_at: a.createdAt };
  await db
    .insertInto('job_artifacts')
    .values({ job_id: a.jobId, attempt: a.attempt, name: a.name, ...values })
    .onConflict((oc) => oc.columns(['job_id', 'attempt', 'name']).doUpdateSet(values))
    .execute();
  return toView({ ...a, created_at: a.createdAt });
}

/** A page of a job's artifacts, run by run, each run's by name: at most `limit`, after `after`. */
export async function listArtifacts(
  db: Db,
  jobId: number,
  page: { after?: ArtifactKey; limit: number },
): Promise<ArtifactView[]> {
  let q = db
    .selectFrom('job_artifacts')
    .select(['attempt', 'name', 'size', 'sha256', 'created_at'])
    .where('job_id', '=', jobId);
  const after = page.after;
  if (after)
    q = q.where((eb) =>
      eb.or([
        eb('attempt', '>', after.attempt),
        eb.and([eb('attempt', '=', after.attempt), eb('name', '>', after.name)]),
      ]),
    );
  const rows = await q.orderBy('attempt').orderBy('name').limit(page.limit).execute();
  return rows.map(toView);
}

/** How many artifacts a job has kept, all runs together. */
export async function countArtifacts(db: Db, jobId: number): Promise<number> {
  const row = await db
    .selectFrom('job_artifacts')
    .select(sql<number | string>`count(*)`.as('n'))
    .where('job_id', '=', jobId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The artifact `name` of run `attempt`, or of the latest run that kept one of that name. */
export async function findArtifact(
  db: Db,
  jobId: number,
  name: string,
  attempt?: number,
): Promise<ArtifactView | undefined> {
  let q = db
    .selectFrom('job_artifacts')
    .select(['attempt', 'name', 'size', 'sha256', 'created_at'])
    .where('job_id', '=', jobId)
    .where('name', '=', name);
  if (attempt !== undefined) q = q.where('attempt', '=', attempt);
  const row = await q.orderBy('attempt', 'desc').limit(1).executeTakeFirst();
  return row && toView(row);
}

/** What a run has kept so far: its files and their bytes, leaving out `except` (a name being uploaded again). */
export async function keptByRun(
  db: Db,
  jobId: number,
  attempt: number,
  except: string,
): Promise<{ files: number; bytes: number }> {
  const row = await db
    .selectFrom('job_artifacts')
    .select([sql<number | string>`count(*)`.as('files'), sql<number | string | null>`sum(size)`.as('bytes')])
    .where('job_id', '=', jobId)
    .where('attempt', '=', attempt)
    .where('name', '!=', except)
    .executeTakeFirst();
  return { files: Number(row?.files ?? 0), bytes: Number(row?.bytes ?? 0) };
}

/** Jobs with artifacts that ended before `cutoff` (epoch ms), at most `limit` of them. */
export async function expiredArtifactJobs(db: Db, cutoff: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('job_artifacts')
    .innerJoin('jobs', 'jobs.id', 'job_artifacts.job_id')
    .select('job_artifacts.job_id')
    .distinct()
    .where('jobs.finished_at', '<', cutoff)
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.job_id));
}

/**
 * Of `jobIds` (directories found on disk), those of jobs that ended before `cutoff`. A directory
 * of no known job is left alone: the directory may be shared, and nothing here made it.
 */
export async function endedBefore(db: Db, jobIds: number[], cutoff: number): Promise<number[]> {
  if (jobIds.length === 0) return [];
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('id', 'in', jobIds)
    .where('finished_at', '<', cutoff)
    .execute();
  return rows.map((r) => Number(r.id));
}

export async function deleteArtifactsOf(db: Db, jobIds: number[]): Promise<void> {
  if (jobIds.length === 0) return;
  await db.deleteFrom('job_artifacts').where('job_id', 'in', jobIds).execute();
}
