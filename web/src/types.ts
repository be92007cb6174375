/**
 * The shapes the API answers with. They all come from the server's own sources in src/domain,
 * by type imports only: nothing of the server ends up in the bundle. Declared here are only the
 * dashboard's own types and JOB_STATES (a value the bundle needs).
 */
import type { Blocker } from '../../src/domain/blocker.js';
import type { Health } from '../../src/domain/health.js';
import type { ClusterQueueView } from '../../src/domain/cluster-queue.js';
import type { ArtifactView } from '../../src/domain/artifact.js';
import type { ArraySummary } from '../../src/domain/job-array.js';
import type { Job, JobAttempt, JobEvent, JobResourceRef, JobSort, JobState } from '../../src/domain/job.js';
import type { Figures, PoolFigures, ResourceTypeView, TargetView } from '../../src/domain/pool-figures.js';
import type { PriorityClass } from '../../src/domain/priority-class.js';
import type { QueueHistorySample, QueueHistoryView } from '../../src/domain/queue-history.js';
import type { ProjectDetailView, ProjectView } from '../../src/domain/project.js';
import type { Role } from '../../src/domain/roles.js';
import type { UsageReport, UsageRow } from '../../src/domain/usage.js';
import type { User as AccountUser, WhoAmI } from '../../src/domain/user.js';

export type {
  ArraySummary,
  ArtifactView,
  Blocker,
  Health,
  ClusterQueueView,
  Figures,
  Job,
  JobAttempt,
  JobEvent,
  JobResourceRef,
  JobSort,
  JobState,
  PoolFigures,
  PriorityClass,
  ProjectDetailView,
  ProjectView,
  QueueHistorySample,
  QueueHistoryView,
  ResourceTypeView,
  Role,
  TargetView,
  UsageReport,
  UsageRow,
  WhoAmI,
};

/** In the order a job goes through them (as the server's JOB_STATES). */
export const JOB_STATES = [
  'queued',
  'admitted',
  'running',
  'succeeded',
  'failed',
  'cancelled',
] as const satisfies readonly JobState[];

const TERMINAL: ReadonlySet<JobState> = new Set<JobState>(['succeeded', 'failed', 'cancelled']);
export const isFinished = (s: JobState): boolean => TERMINAL.has(s);

/** The signed-in user as the dashboard keeps it (the `user` of `hello` on `GET /stream`). */
export type User = Pick<AccountUser, 'name' | 'admin'>;

/** `POST /projects/{name}/jobs`. */
export interface SubmitRequest {
  name?: string;
  command: string[];
  target?: string;
  requests?: Record<string, string>;
  resources?: string[];
  priority?: number | string;
  /** A gang job's number of workers. */
  workers?: number;
  /** A job array: one task per index (`0-99%10`). */
  array?: string;
}

/** `GET /arrays/{id}`: the array and its first task. */
export type ArrayView = ArraySummary & { job: Job };

/** One page of `GET /projects/{name}/jobs`. */
export interface JobPage {
  jobs: Job[];
  /** Jobs matching the state filter (`X-Total-Count`), when the server says. */
  total: number | null;
  /** The next page's cursor (`X-Next-Cursor`); null on the last page. */
  nextCursor: string | null;
}

/** The events of `GET /api/v1/stream`. */
export interface StreamEvents {
  hello: { user: User };
  job: { id: number; project: string; state: JobState; reason: string };
  figures: Figures;
  log: { jobId: number; text: string };
  'log-end': { jobId: number };
}
