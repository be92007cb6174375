import { JOB_STATES, type JobRecord, type JobSpec, type JobState } from '../../domain/job.js';
import { byPriority, compareJobs, type JobKey, type JobSort } from '../../domain/job-order.js';
import { CompiledQuery, sql, type Updateable } from 'kysely';
import type { JobRow, JobsTable } from '../schema.js';
import type { Db } from '../store.js';
import { dialectOf, updateById } from './statement-text.js';

/** The record of row `r`, whose `spec` column (JSON) is `spec`. */
const withSpec = (r: JobRow, spec: JobSpec): JobRecord => ({
  id: Number(r.id),
  project: r.project,
  name: r.name,
  state: r.state as JobState,
  reason: r.reason,
  clusterQueue: r.cluster_queue,
  target: r.target,
  priority: r.priority,
  spec,
  idempotencyKey: r.idempotency_key,
  createdBy: r.created_by,
  exitCode: r.exit_code,
  borrowed: r.borrowed === null ? null : (JSON.parse(r.borrowed) as Record<string, string>),
  cancelRequested: r.cancel_requested === 1,
  cleanedUp: r.cleaned_up === 1,
  attempts: r.attempts,
  retried: r.retried,
  infraRetried: r.infra_retried,
  retryAt: r.retry_at === null ? null : Number(r.retry_at),
  arrayId: r.array_id === null ? null : Number(r.array_id),
  arrayIndex: r.array_index,
  queuedAt: r.queued_at === null ? null : Number(r.queued_at),
  createdAt: Number(r.created_at),
  admittedAt: r.admitted_at === null ? null : Number(r.admitted_at),
  startedAt: r.started_at === null ? null : Number(r.started_at),
  finishedAt: r.finished_at === null ? null : Number(r.finished_at),
});

const toJobRecord = (r: JobRow): JobRecord => withSpec(r, JSON.parse(r.spec) as JobSpec);

export type NewJob = Pick<
  JobRecord,
  | 'project'
  | 'name'
  | 'clusterQueue'
  | 'target'
  | 'priority'
  | 'spec'
  | 'idempotencyKey'
  | 'createdBy'
  | 'reason'
>;

export const toInsert = (j: NewJob, now: number) => ({
  project: j.project,
  name: j.name,
  state: 'queued',
  reason: j.reason,
  cluster_queue: j.clusterQueue,
  target: j.target,
  priority: j.priority,
  spec: JSON.stringify(j.spec),
  idempotency_key: j.idempotencyKey,
  created_by: j.createdBy,
  cancel_requested: 0,
  cleaned_up: 0,
  attempts: 0,
  created_at: now,
});

/**
 * One job on SQLite, as text written once: Kysely's builder compiles a statement on every call
 * (~20 µs here, a fifth of a submission's cost), and the store's cache of prepared statements is
 * keyed by that text, so the same text is prepared once and only bound afterwards.
 */
const INSERT_COLUMNS = Object.keys(toInsert({} as NewJob, 0));
const INSERT_ONE_SQLITE = `INSERT INTO "jobs" (${INSERT_COLUMNS.map((c) => `"${c}"`).join(', ')}) VALUES (${INSERT_COLUMNS.map(() => '?').join(', ')}) ON CONFLICT DO NOTHING RETURNING "id"`;

/**
 * The record of a job just inserted with toInsert's values: the rest are the columns' defaults.
 * Built here rather than read back with RETURNING *, which cost a row object of every column and
 * a parse of the spec per job (test/store/jobs.test.ts checks it against the row as read).
 */
const newJobRecord = (j: NewJob, id: number, now: number): JobRecord => ({
  id,
  project: j.project,
  name: j.name,
  state: 'queued',
  reason: j.reason,
  clusterQueue: j.clusterQueue,
  target: j.target,
  priority: j.priority,
  spec: j.spec,
  idempotencyKey: j.idempotencyKey,
  createdBy: j.createdBy,
  exitCode: null,
  borrowed: null,
  cancelRequested: false,
  cleanedUp: false,
  attempts: 0,
  retried: 0,
  infraRetried: 0,
  retryAt: null,
  arrayId: null,
  arrayIndex: null,
  queuedAt: null,
  createdAt: now,
  admittedAt: null,
  startedAt: null,
  finishedAt: null,
});

/** Rows per insert: PostgreSQL takes at most 65,535 parameters (15 per job). */
const JOBS_PER_INSERT = 1000;

/**
 * Inserts `jobs`, each in the place of its input; a job whose idempotency key its project already
 * has (or an earlier job of the list has) is left out, undefined in its place. On PostgreSQL the
 * jobs go in one statement per thousand — each statement is a round trip — with their ids drawn
 * from the sequence first, so that each row is matched to its input by id (the order of
 * RETURNING's rows is not specified). On SQLite a statement is a function call: one per job.
 */
export async function insertJobs(db: Db, jobs: NewJob[], now: number): Promise<(JobRecord | undefined)[]> {
  if (dialectOf(db) === 'sqlite') {
    const out: (JobRecord | undefined)[] = [];
    for (const j of jobs) {
      const { rows } = await db.executeQuery<{ id: number }>(
        CompiledQuery.raw(INSERT_ONE_SQLITE, Object.values(toInsert(j, now))),
      );
      out.push(rows[0] && newJobRecord(j, Number(rows[0].id), now));
    }
    return out;
  }
  const { rows: ids } = await sql<{ id: number }>`
    SELECT nextval(pg_get_serial_sequence('jobs', 'id')) AS id FROM generate_series(1, ${jobs.length})`.execute(
    db,
  );
  const inserted = new Set<number>();
  for (let i = 0; i < jobs.length; i += JOBS_PER_INSERT) {
    const values = jobs
      .slice(i, i + JOBS_PER_INSERT)
      .map((j, k) => ({ ...toInsert(j, now), id: ids[i + k]!.id }));
    const rows = await db
      .insertInto('jobs')
      .values(values)
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .execute();
    for (const r of rows) inserted.add(Number(r.id));
  }
  return ids.map(({ id }, i) =>
    inserted.has(Number(id)) ? newJobRecord(jobs[i]!, Number(id), now) : undefined,
  );
}

export async function findJob(db: Db, id: number): Promise<JobRecord | undefined> {
  const row = await db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toJobRecord(row);
}

/** Just the state of job `id`, or undefined when there is no such job. */
export async function findJobState(db: Db, id: number): Promise<JobState | undefined> {
  const row = await db.selectFrom('jobs').select('state').where('id', '=', id).executeTakeFirst();
  return row?.state as JobState | undefined;
}

export async function findJobByKey(db: Db, project: string, key: string): Promise<JobRecord | undefined> {
  const row = await db
    .selectFrom('jobs')
    .selectAll()
    .where('project', '=', project)
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
  return row && toJobRecord(row);
}

/** The jobs of `ids` that exist, in no particular order. */
export async function findJobs(db: Db, ids: number[]): Promise<JobRecord[]> {
  if (ids.length === 0) return [];
  return (await db.selectFrom('jobs').selectAll().where('id', 'in', ids).execute()).map(toJobRecord);
}

export async function existingJobIds(db: Db, project: string, ids: number[]): Promise<Set<number>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('project', '=', project)
    .where('id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => Number(r.id)));
}

export interface JobPage {
  project: string;
  /** Only jobs in these states (all when absent or empty). */
  states?: JobState[];
  sort: JobSort;
  /** Only jobs after this place in the order (the previous page's last job). */
  after?: JobKey;
  limit: number;
  /** Each array as one job, its first task (served by jobs_project_listed). */
  collapse?: boolean;
  /** Only this array's tasks. */
  arrayId?: number;
}

/**
 * A page of a project's jobs in any order, each read from an index so a page costs the same with
 * 100,000 jobs as with 10: one index range per state (`state IN (…)` would make SQLite gather and
 * sort every row of those states), merged here. Without a state filter the id orders use
 * (project, id); the priority orders go through every state.
 */
export async function listJobs(db: Db, q: JobPage): Promise<JobRecord[]> {
  const filter = [...new Set(q.states ?? [])];
  const states: (JobState | undefined)[] =
    filter.length > 0 ? filter : byPriority(q.sort) ? [...JOB_STATES] : [undefined];
  const rows: JobRow[] = [];
  for (const state of states) {
    rows.push(...(byPriority(q.sort) ? await byPriorityIn(db, q, state!) : await byIdIn(db, q, state)));
  }
  const page = states.length === 1 ? rows : rows.sort(compareJobs(q.sort)).slice(0, q.limit);
  return page.map(toJobRecord);
}

function inProject(db: Db, q: JobPage, state: JobState | undefined) {
  let query = db.selectFrom('jobs').where('project', '=', q.project);
  if (q.arrayId !== undefined) query = query.where('array_id', '=', q.arrayId);
  // The predicate of the partial index jobs_project_listed, written as it is there.
  if (q.collapse) query = query.where(sql<boolean>`(array_id IS NULL OR array_id = id)`);
  return state === undefined ? query : query.where('state', '=', state);
}

async function byIdIn(db: Db, q: JobPage, state: JobState | undefined): Promise<JobRow[]> {
  const desc = q.sort === '-id';
  let query = inProject(db, q, state).selectAll();
  if (q.after) query = query.where('id', desc ? '<' : '>', q.after.id);
  return query
    .orderBy('id', desc ? 'desc' : 'asc')
    .limit(q.limit)
    .execute();
}

/**
 * One state in a priority order, ties by newest. The index is (project, state, priority, id):
 * the list takes one priority at a time (newest first within it, an index range), then seeks the
 * next priority, so a page costs a few index seeks whatever the direction.
 */
async function byPriorityIn(db: Db, q: JobPage, state: JobState): Promise<JobRow[]> {
  const desc = q.sort === '-priority';
  const nextPriority = async (after: number | undefined): Promise<number | undefined> => {
    let query = inProject(db, q, state).select('priority');
    if (after !== undefined) query = query.where('priority', desc ? '<' : '>', after);
    const row = await query
      .orderBy('priority', desc ? 'desc' : 'asc')
      .limit(1)
      .executeTakeFirst();
    return row?.priority;
  };
  const out: JobRow[] = [];
  let priority = q.after ? q.after.key : await nextPriority(undefined);
  let below = q.after?.id;
  while (priority !== undefined && out.length < q.limit) {
    let query = inProject(db, q, state).selectAll().where('priority', '=', priority);
    if (below !== undefined) query = query.where('id', '<', below);
    out.push(
      ...(await query
        .orderBy('id', 'desc')
        .limit(q.limit - out.length)
        .execute()),
    );
    if (out.length < q.limit) priority = await nextPriority(priority);
    below = undefined;
  }
  return out;
}

/** Unfinished jobs, and finished ones whose cleanup is not confirmed: the controller's model. */
export async function loadActiveJobs(db: Db): Promise<JobRecord[]> {
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .where('cleaned_up', '=', 0) // every unfinished job is also not cleaned up
    .orderBy('id')
    .execute();
  return rows.map(toJobRecord);
}

/**
 * The controller's model as loadActiveJobs reads it, in pages of `pageSize` jobs by id, for the
 * rebuild on start (controller/restore.ts). A million queued jobs read in one piece were every row
 * and every record at once (3.5 GiB, and most of a minute collecting garbage: issue #18); a page's
 * rows are garbage before the next is read. What rows repeat is shared rather than copied per
 * job, as the model keeps it for as long as the job waits: one spec object per spec text (an
 * array's tasks have one; service/jobs/array-submission.ts shares it the same way), and one copy of
 * each string seen again (project, queue, target, state, reason, name, submitter).
 */
export async function* activeJobPages(db: Db, pageSize = 1000): AsyncGenerator<JobRecord[]> {
  const shared = new Sharing();
  for (let after = 0; ;) {
    const rows = await db
      .selectFrom('jobs')
      .selectAll()
      .where('cleaned_up', '=', 0)
      .where('id', '>', after)
      .orderBy('id')
      .limit(pageSize)
      .execute();
    if (rows.length === 0) return;
    after = Number(rows.at(-1)!.id);
    yield rows.map((r) => shared.record(r));
  }
}

/** The unfinished jobs that are not queued, and finished ones not yet cleaned up (few, at most). */
export async function loadJobsInPlay(db: Db): Promise<JobRecord[]> {
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .where('cleaned_up', '=', 0)
    .where('state', '<>', 'queued')
    .orderBy('id')
    .execute();
  return rows.map(toJobRecord);
}

/** One copy of each string and spec the rows of one read repeat (see activeJobPages). */
class Sharing {
  // Bounded: distinct values (names numbered per job, say) start them afresh rather than pile up.
  private static readonly MAX = 10_000;
  private readonly strings = new Map<string, string>();
  private readonly specs = new Map<string, JobSpec>();

  record(r: JobRow): JobRecord {
    let spec = this.specs.get(r.spec);
    if (spec === undefined) {
      if (this.specs.size >= Sharing.MAX) this.specs.clear();
      spec = JSON.parse(r.spec) as JobSpec;
      this.specs.set(r.spec, spec);
    }
    const record = withSpec(r, spec);
    record.project = this.string(record.project);
    record.name = this.string(record.name);
    record.reason = this.string(record.reason);
    record.clusterQueue = this.string(record.clusterQueue);
    record.target = this.string(record.target);
    record.createdBy = this.string(record.createdBy);
    record.state = this.string(record.state) as JobState;
    return record;
  }

  private string(s: string): string {
    const kept = this.strings.get(s);
    if (kept !== undefined) return kept;
    if (this.strings.size >= Sharing.MAX) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }
}

/** The fields of a job that change after submission, in domain terms. */
export type JobUpdate = Partial<
  Pick<
    JobRecord,
    | 'state'
    | 'reason'
    | 'exitCode'
    | 'borrowed'
    | 'cancelRequested'
    | 'cleanedUp'
    | 'attempts'
    | 'retried'
    | 'infraRetried'
    | 'retryAt'
    | 'queuedAt'
    | 'admittedAt'
    | 'startedAt'
    | 'finishedAt'
  >
>;

export async function updateJob(db: Db, id: number, set: JobUpdate): Promise<void> {
  const row: Updateable<JobsTable> = {};
  if (set.state !== undefined) row.state = set.state;
  if (set.reason !== undefined) row.reason = set.reason;
  if (set.exitCode !== undefined) row.exit_code = set.exitCode;
  if (set.borrowed !== undefined) row.borrowed = set.borrowed === null ? null : JSON.stringify(set.borrowed);
  if (set.cancelRequested !== undefined) row.cancel_requested = set.cancelRequested ? 1 : 0;
  if (set.cleanedUp !== undefined) row.cleaned_up = set.cleanedUp ? 1 : 0;
  if (set.attempts !== undefined) row.attempts = set.attempts;
  if (set.retried !== undefined) row.retried = set.retried;
  if (set.infraRetried !== undefined) row.infra_retried = set.infraRetried;
  if (set.retryAt !== undefined) row.retry_at = set.retryAt;
  if (set.queuedAt !== undefined) row.queued_at = set.queuedAt;
  if (set.admittedAt !== undefined) row.admitted_at = set.admittedAt;
  if (set.startedAt !== undefined) row.started_at = set.startedAt;
  if (set.finishedAt !== undefined) row.finished_at = set.finishedAt;
  await updateById(db, 'jobs', id, row);
}

/**
 * Sets the job's image to `image` (its reference pinned to a digest): the one change a spec sees
 * after submission, so that every later attempt runs the same bytes. Read and written in the
 * caller's transaction.
 */
export async function pinJobImage(db: Db, id: number, image: string): Promise<void> {
  const row = await db.selectFrom('jobs').select('spec').where('id', '=', id).executeTakeFirst();
  if (!row) return;
  const spec = JSON.parse(row.spec) as JobSpec;
  await updateById(db, 'jobs', id, { spec: JSON.stringify({ ...spec, image }) });
}

const UNFINISHED: JobState[] = ['queued', 'admitted', 'running'];

/** The ids of a project's unfinished jobs, oldest first. */
export async function unfinishedJobIds(db: Db, project: string): Promise<number[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('project', '=', project)
    .where('state', 'in', UNFINISHED)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** How many unfinished jobs name cluster queue `queue` (served by jobs_queue_unfinished). */
export async function countUnfinishedInQueue(db: Db, queue: string): Promise<number> {
  const row = await db
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('cluster_queue', '=', queue)
    .where('state', 'in', UNFINISHED)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A project's queued jobs follow it to cluster queue `queue`; admitted and running ones stay. */
export async function moveQueuedJobs(db: Db, project: string, queue: string): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ cluster_queue: queue })
    .where('project', '=', project)
    .where('state', '=', 'queued')
    .execute();
}

/**
 * Files a deleted project's jobs, their events and counts under `archivedAs`, a name no project
 * can take: a new project of the same name starts with no jobs, and admins still find the old.
 */
export async function archiveProjectJobs(db: Db, project: string, archivedAs: string): Promise<void> {
  await db.updateTable('jobs').set({ project: archivedAs }).where('project', '=', project).execute();
  // Through the indexes on events: the jobs' events by job id, the project's own by subject.
  await db
    .updateTable('events')
    .set({ project: archivedAs })
    .where('job_id', 'in', db.selectFrom('jobs').select('id').where('project', '=', archivedAs))
    .execute();
  await db
    .updateTable('events')
    .set({ project: archivedAs, subject: archivedAs })
    .where('subject_kind', '=', 'project')
    .where('subject', '=', project)
    .where('job_id', 'is', null)
    .execute();
  await db.updateTable('job_counts').set({ project: archivedAs }).where('project', '=', project).execute();
}
