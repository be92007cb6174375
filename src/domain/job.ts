/** Jobs: the unit of work, and its life cycle. */
// The scheduler's blocker type is pure data and itself built on domain types; it is the shape
// `GET /jobs/{id}` shows, so the job view names it rather than restating it.
import type { Blocker } from './blocker.js';
import type { ArraySummary } from './job-array.js';
import type { Amounts } from './quantity.js';

import type { JobState } from './job-state.js';

export { isTerminal, JOB_STATES, TERMINAL_STATES, type JobState } from './job-state.js';

/** The orders of a project's job list (job-order.ts): `-id` newest first (the default), `id`
 * oldest first, `-priority`/`priority` with ties by newest. */
export const JOB_SORTS = ['-id', 'id', '-priority', 'priority'] as const;
export type JobSort = (typeof JOB_SORTS)[number];

/** What the submitter asked for, kept verbatim (quantities as written). */
export interface JobSpec {
  /** Its argv; empty only for a job in an image that runs the image's own Entrypoint and Cmd. */
  command: string[];
  env: Record<string, string>;
  timeoutSeconds: number | null;
  requests: Record<string, string>;
  resources: string[];
  /** Jobs that must succeed first (Slurm's afterok). */
  dependsOn: number[];
  /** Jobs that must end first, however they end (afterany); absent: none. */
  dependsOnAny?: number[];
  /** Jobs that must fail or be cancelled first (afternotok); absent: none. */
  dependsOnFailed?: number[];
  /** The priority class the submitter named, if any (its value is the job's priority). */
  priorityClass?: string;
  /**
   * A gang job's number of workers, all given at once (absent: 1). Each runs the command with its
   * rank; `requests` are per worker, so the job counts `requests` × `workers` against quota.
   */
  workers?: number;
  /**
   * Glob patterns, relative to the job's working directory, of the files its agent uploads as
   * artifacts when its process has ended (domain/artifact.ts); absent: none.
   */
  artifacts?: string[];
  /** Retries after the job's own failures (non-zero exit, timeout); absent: none. */
  retries?: number;
  /** Retries after the infrastructure's failures (worker lost, node failure); absent: none. */
  infraRetries?: number;
  /** The first retry's delay, doubled for each later one (domain/retry.ts); absent: the default. */
  retryBackoffSeconds?: number;
  /** A task's array as submitted (`0-999%50`, domain/job-array.ts); absent for a job of its own. */
  array?: string;
  /** How many of its array's tasks may be in play at once; absent: all. */
  arrayThrottle?: number;
  /**
   * The OCI image it runs in (images/reference.ts), written out in full: `registry/name:tag`, and
   * `@sha256:…` once pinned — as given, or when the job first got past admission (the registry's
   * answer then), so that every later attempt runs the same bytes. Absent: the host's files.
   */
  image?: string;
  /**
   * Run on a terminal its submitter attaches to (`berth run -it`, `berth attach`): its command
   * starts once one is attached, and it ends when none has been for a while, or nothing moves on
   * it (config `interactive`). Absent: a batch job.
   */
  interactive?: boolean;
}

/** The most workers one gang job may ask for. */
export const MAX_GANG_WORKERS = 1024;

/**
 * A job as the store keeps it, in domain terms (epoch-millisecond times, the spec parsed): what
 * the store's queries return and what the service hands the controller. The API's view of it is
 * `Job` below.
 */
export interface JobRecord {
  id: number;
  project: string;
  name: string;
  state: JobState;
  reason: string;
  clusterQueue: string;
  target: string;
  priority: number;
  spec: JobSpec;
  idempotencyKey: string | null;
  createdBy: string;
  exitCode: number | null;
  /** Quantities borrowed from the cohort at admission, as written (`{"cpu": "2"}`), or null. */
  borrowed: Record<string, string> | null;
  cancelRequested: boolean;
  cleanedUp: boolean;
  /** Attempts that ended before the current one: evictions and retries (the current is attempts + 1). */
  attempts: number;
  /** Retries used, per budget (domain/retry.ts). */
  retried: number;
  infraRetried: number;
  /** While it waits to be retried: when it goes back to its queue. */
  retryAt: number | null;
  /** A task's array (the job id of its first task) and index; null for a job of its own. */
  arrayId: number | null;
  arrayIndex: number | null;
  /**
   * When its current attempt entered its queue, if not at its creation: the previous attempt's
   * end, or its retry's backoff's (usage accounting's wait, domain/usage.ts); null: `createdAt`.
   */
  queuedAt: number | null;
  createdAt: number;
  admittedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface JobResourceRef {
  type: string;
  id: number | null;
  state: string;
}

export interface Job {
  id: number;
  project: string;
  name: string;
  state: JobState;
  /** Why it is where it is: what it waits for, or how it ended. */
  reason: string;
  /**
   * The instants `reason` names (ISO 8601, UTC), in order: the same times as data, for a client
   * to show in its reader's zone (domain/reason-times.ts).
   */
  reasonTimes: string[];
  /**
   * Just submitted: `reason` is said from its place in the queue before the scheduler has weighed
   * it; its next pass may say more (a reservation). False once it has.
   */
  provisional: boolean;
  /** 1-based position in its cluster queue while queued, else null. */
  position: number | null;
  /** 1-based position among its project's pending jobs in that queue while queued, else null. */
  projectPosition: number | null;
  /** What holds it back while queued (short quota, hold, cohort, missing queue…); else []. */
  blockers: Blocker[];
  /**
   * While queued in its cluster queue: when it is expected to start (ISO 8601), an estimate from a
   * forecast of the scheduler; null when none is made (see `estimate`) or it is not queued.
   */
  estimatedStartAt: string | null;
  /** How `estimatedStartAt` was made, or why there is none; null when it is not queued. */
  estimate: string | null;
  exitCode: number | null;
  clusterQueue: string;
  target: string;
  priority: number;
  /** The priority class it was submitted with, or null for a plain number. */
  priorityClass: string | null;
  /** Per worker; the job counts them `workers` times against quota. */
  requests: Record<string, string>;
  /** How many workers it runs on at once (a gang job when more than 1). */
  workers: number;
  borrowed: Record<string, string> | null;
  resources: JobResourceRef[];
  /** Its worker, and the devices each member holds (by rank: kind → ids) where it has any. */
  worker: { id: number; state: string; devices?: Record<string, string[]>[] } | null;
  command: string[];
  /** The image it runs in (`registry/name:tag`, as given or its target's default); null: none. */
  image: string | null;
  /** The digest that image was pinned to (at submission when given, else when admitted); null until then. */
  imageDigest: string | null;
  /** Run on a terminal its submitter attaches to (`berth run -it`, `berth attach`). */
  interactive: boolean;
  env: Record<string, string>;
  timeoutSeconds: number | null;
  dependsOn: number[];
  dependsOnAny: number[];
  dependsOnFailed: number[];
  /** The glob patterns of the files kept as artifacts when it ends ([] for none). */
  artifacts: string[];
  createdBy: string;
  /** Attempts that ended before the current one (evictions and retries); the current is attempts + 1. */
  attempts: number;
  /** Retries allowed after the job's own failures, and after the infrastructure's. */
  retries: number;
  infraRetries: number;
  /** The first retry's delay; each later one doubles it. */
  retryBackoffSeconds: number;
  /** Retries used so far, per budget. */
  retried: number;
  infraRetried: number;
  /** While it waits to be retried: when it goes back to its queue; else null. */
  retryAt: string | null;
  /** A task's array (the job id of its first task) and its index; null for a job of its own. */
  arrayId: number | null;
  arrayIndex: number | null;
  /** On an array's first task in a list with arrays collapsed (and `GET /arrays/{id}`): the array. */
  array?: ArraySummary;
  cancelRequested: boolean;
  createdAt: string;
  admittedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  cleanedUp: boolean;
}

/**
 * One attempt of a job (`GET /jobs/{id}/attempts`): every ended one, and the current or last. An
 * attempt runs from its admission (or the previous attempt's end) to its eviction, its retry, or
 * the job's end.
 */
export interface JobAttempt {
  attempt: number;
  /** `requeued`: evicted, back in its queue; `retried`: failed, retried; else the job's state. */
  outcome: 'requeued' | 'retried' | JobState;
  reason: string;
  exitCode: number | null;
  /** What the attempt's end was charged to: `job`, `infrastructure`, or `none` (an eviction). */
  charged: 'job' | 'infrastructure' | 'none' | null;
  startedAt: string | null;
  endedAt: string | null;
}

/** One entry of a job's timeline (`GET /jobs/{id}/events`). */
export interface JobEvent {
  id: number;
  /** ISO 8601. */
  at: string;
  type: string;
  message: string;
  data?: unknown;
}

/**
 * One entry of `GET /cluster-queues/{name}/pending`, in admission order: a job, or only its place
 * when the caller may not see its project.
 */
export type PendingEntry = { position: number; estimatedStartAt: string | null } & (
  Pick<Job, 'id' | 'project' | 'name' | 'priority' | 'createdAt'> | { hidden: true }
);

/** The slice of a job the controller keeps in memory while the job is unfinished. */
export interface ActiveJob {
  id: number;
  project: string;
  queue: string;
  target: string;
  priority: number;
  createdAt: number;
  requests: Amounts;
  state: JobState;
  timeoutSeconds: number | null;
  dependsOn: number[];
  cancelRequested: boolean;
  admittedAt: number | null;
  startedAt: number | null;
  borrowed: Amounts | null;
}
