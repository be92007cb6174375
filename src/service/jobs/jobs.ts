/** Job submission and the read side of jobs: checks, persistence, and the live overlay. */
import { JOBS_RESOURCE } from '../../domain/cluster-queue.js';
import { maxReachable } from '../../domain/capacity.js';
import { BadRequestError, ConflictError, NotFoundError, UnprocessableError } from '../../domain/errors.js';
import {
  isTerminal,
  MAX_GANG_WORKERS,
  type Job,
  type JobRecord,
  type JobSpec,
  type JobState,
} from '../../domain/job.js';
import { checkArtifactPatterns } from '../../domain/artifact.js';
import { formatSpan } from '../../domain/duration.js';
import { dependenciesOf, type DependencyCondition } from '../../domain/dependency.js';
import { retrySpec } from '../../domain/retry.js';
import { arraySpecOf } from '../../domain/job-array.js';
import { decodeCursor, encodeCursor, jobKey, type JobSort } from '../../domain/job-order.js';
import { checkName, CONTROL_CHARACTER, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../../domain/names.js';
import { formatAmount, parseAmount, type QuantityInput } from '../../domain/quantity.js';
import type { Principal } from '../../domain/user.js';
import { appendEvent, listJobEvents, type EventView } from '../../store/queries/events.js';
import {
  existingJobIds,
  type NewJob,
  findJob,
  findJobByKey,
  listJobs as listJobRecords,
  updateJob,
} from '../../store/queries/jobs.js';
import { countJobs } from '../../store/queries/job-counts.js';
import { listPrivileges } from '../../store/queries/projects.js';
import type { Db } from '../../store/store.js';
import type { QueueModel } from '../../controller/port.js';
import { SubmissionWriter } from './submission-writer.js';
import { commitUnit, type Announce } from '../live/notices.js';
import { taskCount, writeArray } from './array-submission.js';
import { accept } from './submission.js';
import { countTasks, withArraySummaries } from './array-summaries.js';
import { actorName, requireProject } from '../tenancy/access.js';
import { audit, auditActor } from '../tenancy/audit.js';
import { type JobRuntime, type ServiceContext, type With } from '../context.js';
import { jobView, jobViews } from './job-views.js';
import { resolvePriority } from './priority-classes.js';
import { missingJob } from '../upkeep/retention.js';

export interface SubmitInput {
  name?: string;
  command?: string[];
  script?: string;
  target?: string;
  requests?: Record<string, QuantityInput>;
  resources?: string[];
  /** A number, or the name of a priority class. */
  priority?: number | string;
  env?: Record<string, string>;
  timeoutSeconds?: number;
  dependsOn?: (number | string)[];
  dependsOnAny?: (number | string)[];
  dependsOnFailed?: (number | string)[];
  idempotencyKey?: string;
  /** A gang job's number of workers (1 by default). */
  workers?: number;
  /** Retry budgets and backoff (domain/retry.ts). */
  retries?: number;
  infraRetries?: number;
  retryBackoffSeconds?: number;
  /** Slurm's --array: one task per index (domain/job-array.ts). */
  array?: string;
  /** Glob patterns of the files kept as artifacts (domain/artifact.ts). */
  artifacts?: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The submission field that gives each kind of dependency. */
const FIELD_OF: Record<DependencyCondition, string> = {
  success: 'dependsOn',
  end: 'dependsOnAny',
  failure: 'dependsOnFailed',
};

function buildSpec(input: SubmitInput): JobSpec {
  if (input.command && input.script !== undefined)
    throw new BadRequestError('give either command or script, not both');
  const command = input.command ?? (input.script !== undefined ? ['/bin/sh', '-c', input.script] : undefined);
  if (!command || command.length === 0 || !command[0])
    throw new BadRequestError('a job needs a command (argv list) or a script');
  const requests: Record<string, string> = {};
  for (const [resource, value] of Object.entries(input.requests ?? {})) {
    checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, 'requests: resource', resource);
    if (resource === JOBS_RESOURCE)
      throw new BadRequestError('requests.jobs: every job implicitly requests jobs: 1; leave it out');
    parseAmount(resource, value, `requests.${resource}`);
    requests[resource] = typeof value === 'number' ? String(value) : value.trim();
  }
  for (const k of Object.keys(input.env ?? {})) {
    if (!ENV_NAME.test(k))
      throw new BadRequestError(`env: ${JSON.stringify(k)} is not a valid variable name`);
    if (k.startsWith('BERTH_'))
      throw new BadRequestError(`env: ${k}: variables starting with BERTH_ are set by berth`);
  }
  const ids = (field: string, list: (number | string)[] | undefined): number[] => [
    ...new Set(
      (list ?? []).map((d) => {
        const n = typeof d === 'number' ? d : Number(d);
        if (!Number.isSafeInteger(n) || n <= 0)
          throw new BadRequestError(`${field}: ${JSON.stringify(d)} is not a job id`);
        return n;
      }),
    ),
  ];
  const dependsOn = ids('dependsOn', input.dependsOn);
  const dependsOnAny = ids('dependsOnAny', input.dependsOnAny);
  const dependsOnFailed = ids('dependsOnFailed', input.dependsOnFailed);
  const workers = input.workers ?? 1;
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > MAX_GANG_WORKERS)
    throw new BadRequestError(`workers: ${workers} is not a whole number from 1 to ${MAX_GANG_WORKERS}`);
  const artifacts = checkArtifactPatterns(input.artifacts ?? []);
  return {
    command,
    env: input.env ?? {},
    timeoutSeconds: input.timeoutSeconds ?? null,
    requests,
    resources: [...new Set(input.resources ?? [])].sort(),
    dependsOn,
    // Kept only when given, so that a spec without them stays as it always was.
    ...(dependsOnAny.length > 0 ? { dependsOnAny } : {}),
    ...(dependsOnFailed.length > 0 ? { dependsOnFailed } : {}),
    // Kept only for a gang, so a one-worker job's spec stays as it always was.
    ...(workers > 1 ? { workers } : {}),
    ...retrySpec(input),
    ...arraySpecOf(input.array),
    ...(artifacts.length > 0 ? { artifacts } : {}),
  };
}

/**
 * A job that gives no timeout gets its target's `defaultTimeout`, kept in its spec: it is then
 * stopped after it, shown with it, and may run on a pilot worker (which needs to know it ends).
 */
function withDefaultTimeout(spec: JobSpec, seconds: number | undefined): JobSpec {
  return spec.timeoutSeconds === null && seconds !== undefined ? { ...spec, timeoutSeconds: seconds } : spec;
}

/**
 * Refuses with 422 anything that could never run: unknown target or resource, missing privilege,
 * too big. Returns the project's cluster queue.
 */
async function checkRunnable(
  db: Db,
  rt: JobRuntime,
  project: string,
  queueName: string,
  target: string,
  spec: JobSpec,
): Promise<QueueModel> {
  const targetConfig = rt.targets[target];
  if (!targetConfig) {
    throw new UnprocessableError(
      `unknown target "${target}" (known: ${Object.keys(rt.targets).join(', ') || 'none'})`,
    );
  }
  // Read only when something asks for one: most jobs need none, and each read is a round trip.
  let read: Set<string> | undefined;
  const has = async (privilege: string) =>
    (read ??= new Set(await listPrivileges(db, project))).has(privilege);
  if (targetConfig.privilege && !(await has(targetConfig.privilege))) {
    throw new UnprocessableError(
      `target "${target}" requires privilege ${targetConfig.privilege}, which project "${project}" does not have`,
    );
  }
  for (const type of spec.resources) {
    const rtype = rt.resourceTypes[type];
    if (!rtype)
      throw new UnprocessableError(
        `unknown resource type "${type}" (known: ${Object.keys(rt.resourceTypes).join(', ') || 'none'})`,
      );
    if (rtype.privilege && !(await has(rtype.privilege))) {
      throw new UnprocessableError(
        `resource type "${type}" requires privilege ${rtype.privilege}, which project "${project}" does not have`,
      );
    }
  }
  const limit = rt.workerTimeLimits?.[target];
  if (limit !== undefined && spec.timeoutSeconds !== null && spec.timeoutSeconds > limit) {
    throw new UnprocessableError(
      `timeoutSeconds: ${spec.timeoutSeconds} is longer than target "${target}" lets a worker run (${limit} s, its factory's timeLimit): the job would be stopped before its timeout`,
    );
  }
  const workers = spec.workers ?? 1;
  const capacity = rt.workerCapacity?.[target];
  if (capacity !== undefined && workers > capacity) {
    throw new UnprocessableError(
      `workers: ${workers} is more than target "${target}" can ever give at once (its factory's capacity is ${capacity})`,
    );
  }
  checkDevices(rt, target, spec.requests, workers);
  const queues = [...rt.controller.queueModels()];
  const queue = queues.find((q) => q.name === queueName);
  if (!queue)
    throw new ConflictError(`project "${project}" uses cluster queue "${queueName}", which does not exist`);
  for (const [resource, text] of Object.entries(spec.requests)) {
    const amount = parseAmount(resource, text) * workers;
    const max = maxReachable(queue, queues, resource);
    if (amount > max) {
      const asked = workers > 1 ? `${text} × ${workers} workers` : text;
      throw new UnprocessableError(
        `requests.${resource}: ${asked} is more than cluster queue "${queueName}" can ever grant (${formatAmount(resource, max)})`,
      );
    }
  }
  if (maxReachable(queue, queues, JOBS_RESOURCE) < 1) {
    throw new UnprocessableError(
      `cluster queue "${queueName}" has a jobs quota of 0: it can never admit a job`,
    );
  }
  return queue;
}

export async function submitJob(
  ctx: With<'runtime'>,
  p: Principal,
  projectName: string,
  input: SubmitInput,
): Promise<{ job: Job; created: boolean }> {
  const createdBy = actorName(p);
  const rt = ctx.runtime;
  const target = input.target ?? rt.defaultTarget;
  const spec = withDefaultTimeout(buildSpec(input), rt.targets[target]?.defaultTimeoutSeconds);
  // The checks read before the write, on a connection of their own: the write transaction, which
  // one server runs one at a time (store/group-commit.ts), holds only the two inserts. (Inside it
  // they would be no safer: read committed takes no lock on what it reads.)
  const db = ctx.store.db;
  const { project } = await requireProject(db, p, projectName, 'member', 'submitting jobs', ctx.projectCache);
  if (input.idempotencyKey) {
    const existing = await findJobByKey(db, project.name, input.idempotencyKey);
    if (existing) return { job: await jobView(ctx, p, existing, false), created: false };
  }
  if (!project.active)
    throw new ConflictError(`project "${project.name}" is inactive: it accepts no new jobs`);
  const queue = await checkRunnable(db, rt, project.name, project.clusterQueue, target, spec);
  const deps = dependenciesOf(spec);
  const known = await existingJobIds(db, project.name, [...new Set(deps.map((d) => d.job))]);
  const unknown = deps.find((d) => !known.has(d.job));
  if (unknown) {
    const field = FIELD_OF[unknown.on];
    const missing = deps.filter((d) => d.on === unknown.on && !known.has(d.job)).map((d) => d.job);
    throw new UnprocessableError(`${field}: no job ${missing.join(', ')} in project "${project.name}"`);
  }
  const priority = await resolvePriority(db, input.priority);
  const job: NewJob = {
    project: project.name,
    name: input.name ?? defaultName(spec.command),
    clusterQueue: project.clusterQueue,
    target,
    priority: priority.value,
    spec: priority.priorityClass === null ? spec : { ...spec, priorityClass: priority.priorityClass },
    idempotencyKey: input.idempotencyKey ?? null,
    createdBy,
    reason: `waiting in cluster queue ${project.clusterQueue}`,
  };
  // Env names only: their values may be secrets.
  const auditEntry = {
    ...auditActor(p),
    action: 'job.submit' as const,
    project: project.name,
    detail: submissionDetail(job.name, target, spec),
  };
  // Said in the timeline: a job stopped after a timeout it never gave shows where that came from.
  const note =
    input.timeoutSeconds === undefined && spec.timeoutSeconds !== null
      ? `; timeout ${formatSpan(spec.timeoutSeconds * 1000, 2)}, target ${target}'s defaultTimeout`
      : '';
  const rows =
    spec.array !== undefined
      ? {
          count: taskCount(job),
          write: () => writeArray(ctx, { job, audit: auditEntry, note, write: (fn) => write(ctx, fn) }),
        }
      : {
          count: 1,
          write: async () => {
            const record = await submissionsOf(ctx).submit({
              job,
              inserted: async (db, record, announce) => {
                const message = `submitted by ${createdBy} to cluster queue ${project.clusterQueue}${note}`;
                const event = { subjectKind: 'job', subject: String(record.id), project: project.name };
                await appendEvent(
                  db,
                  { ...event, jobId: record.id, type: 'submitted', message },
                  record.createdAt,
                );
                announce({ kind: 'submitted', record });
              },
              // Written with the batch's jobs, in bulk.
              audit: auditEntry,
            });
            return record && [record];
          },
        };
  return accept(ctx, {
    project,
    queue,
    submitter: p,
    idempotencyKey: job.idempotencyKey,
    what: spec.array !== undefined ? 'array' : 'job',
    ...rows,
  });
}

/** What the audit keeps of a submission: never its command or env values, which may hold secrets. */
function submissionDetail(name: string, target: string, spec: JobSpec): Record<string, unknown> {
  const env = Object.keys(spec.env);
  return {
    name,
    target,
    ...(env.length > 0 ? { env } : {}),
    ...((spec.workers ?? 1) > 1 ? { workers: spec.workers } : {}),
    ...(spec.array !== undefined ? { array: spec.array } : {}),
  };
}

const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER, 'g');

function defaultName(command: string[]): string {
  const first = command[0] === '/bin/sh' && command[1] === '-c' ? 'script' : (command[0] ?? 'job');
  // A name given is refused with a control character (api/job-schemas.ts); one made is cleaned.
  return first.split('/').pop()!.replace(CONTROL_CHARACTERS, '').slice(0, 63) || 'job';
}

/**
 * Loads a job the caller may see (404 otherwise, so ids of other projects reveal nothing). Its
 * logs and artifacts are read under the same check.
 */
export async function visibleJob(
  ctx: ServiceContext,
  p: Principal,
  id: number,
  needed: 'viewer' | 'member' = 'viewer',
): Promise<JobRecord> {
  const job = await findJob(ctx.store.db, id);
  const notFound = new NotFoundError(`job ${id} not found`);
  // A job the retention removed says so, and when it ended (service/upkeep/retention.ts).
  if (!job) throw await missingJob(ctx, id);
  if (p.kind === 'job') {
    if (p.jobId !== id) throw notFound;
    return job;
  }
  // Admins see every job, also one of a deleted project (filed under its archive name).
  if (p.kind === 'user' && p.user.admin) return job;
  try {
    await requireProject(
      ctx.store.db,
      p,
      job.project,
      needed,
      needed === 'member' ? 'changing jobs' : 'reading jobs',
    );
  } catch (e) {
    if (e instanceof NotFoundError) throw notFound;
    throw e;
  }
  return job;
}

export async function getJob(ctx: ServiceContext, p: Principal, id: number): Promise<Job> {
  return jobView(ctx, p, await visibleJob(ctx, p, id));
}

export interface JobListQuery {
  states?: JobState[];
  sort?: JobSort;
  /** From the previous page's `nextCursor`. */
  cursor?: string;
  /** Older API: only jobs with a smaller id (newest first only). */
  before?: number;
  limit?: number;
  /** Each array as one entry (its first task, with `array` saying how its tasks stand). */
  collapse?: boolean;
  /** Only this array's tasks. */
  array?: number;
}

export interface JobList {
  jobs: Job[];
  /** Jobs matching the state filter, on every page. */
  total: number;
  /** Where the next page starts; absent on the last page. */
  nextCursor?: string;
}

export async function listJobs(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  q: JobListQuery,
): Promise<JobList> {
  const db = ctx.store.db;
  await requireProject(db, p, project, 'viewer', 'reading jobs');
  const sort = q.sort ?? '-id';
  let after = q.cursor === undefined ? undefined : decodeCursor(q.cursor, sort);
  if (q.before !== undefined) {
    if (after || sort !== '-id')
      throw new BadRequestError('before: only for the default order without a cursor; page with cursor');
    after = { key: q.before, id: q.before };
  }
  const limit = q.limit ?? 100;
  // One more than asked: whether it exists says whether there is a next page.
  if (q.collapse && q.array !== undefined)
    throw new BadRequestError(
      "give either collapse (arrays as one entry) or array (one array's tasks), not both",
    );
  const records = await listJobRecords(db, {
    project,
    states: q.states,
    sort,
    after,
    limit: limit + 1,
    collapse: q.collapse,
    arrayId: q.array,
  });
  const page = records.slice(0, limit);
  const last = page.at(-1);
  const jobs = await jobViews(ctx, p, page);
  if (q.collapse) await withArraySummaries(db, page, jobs);
  return {
    jobs,
    total:
      q.array === undefined
        ? await countJobs(db, project, q.states)
        : await countTasks(db, q.array, q.states),
    nextCursor: records.length > limit && last ? encodeCursor(sort, jobKey(sort, last)) : undefined,
  };
}

/**
 * Records the request to cancel, with its event, and announces it (service/live/notices.ts): the controller
 * stops the job — here, or on the leading replica.
 */
export async function cancelJob(ctx: ServiceContext, p: Principal, id: number): Promise<Job> {
  const job = await visibleJob(ctx, p, id, 'member');
  if (isTerminal(job.state)) throw new ConflictError(`job ${id} has already finished (${job.state})`);
  const by = actorName(p);
  const reason = `cancelled by ${by}`;
  await write(ctx, async (db, announce) => {
    await updateJob(db, id, { cancelRequested: true });
    const event = { subjectKind: 'job', subject: String(id), project: job.project, jobId: id };
    const now = ctx.now();
    await appendEvent(db, { ...event, type: 'cancel-requested', message: reason }, now);
    await audit(db, p, { action: 'job.cancel', subject: String(id), project: job.project }, now);
    announce({ kind: 'cancel', id, project: job.project, state: job.state, by });
  });
  return jobView(ctx, p, (await findJob(ctx.store.db, id))!);
}

/**
 * One unit on the group commit the submissions share (a plain transaction without one); what it
 * announces is heard once it has committed (service/live/notices.ts).
 */
export function write<T>(ctx: ServiceContext, fn: (db: Db, announce: Announce) => Promise<T>): Promise<T> {
  return commitUnit(ctx, fn, { grouped: true });
}

/** The submissions of one server share a writer (submission-writer.ts). */
const writers = new WeakMap<ServiceContext, SubmissionWriter>();
function submissionsOf(ctx: ServiceContext): SubmissionWriter {
  let w = writers.get(ctx);
  if (!w) writers.set(ctx, (w = new SubmissionWriter((fn) => write(ctx, fn), ctx.now)));
  return w;
}

export async function jobEvents(ctx: ServiceContext, p: Principal, id: number): Promise<EventView[]> {
  await visibleJob(ctx, p, id);
  return listJobEvents(ctx.store.db, id);
}

/**
 * A worker member asks for more devices of a kind than its target's factory has: it could never
 * start (docs/DEVICES.md).
 */
function checkDevices(
  rt: JobRuntime,
  target: string,
  requests: Record<string, QuantityInput>,
  workers: number,
): void {
  const factory = rt.targets[target]?.factory;
  const counts = factory === undefined ? undefined : rt.devices?.[factory]?.counts;
  if (!counts) return;
  for (const [kind, have] of Object.entries(counts)) {
    const text = requests[kind];
    if (text === undefined) continue;
    const perMember = Math.ceil(parseAmount(kind, text));
    if (perMember > have)
      throw new UnprocessableError(
        `requests.${kind}: ${String(text)}${workers > 1 ? ' per worker' : ''} is more than target "${target}" can ever give (factory ${factory} has ${have} ${kind})`,
      );
  }
}
