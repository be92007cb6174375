/**
 * The shapes the API answers with. Pure domain types come from the server's own sources (type
 * imports only: nothing of the server ends up in the bundle); view types that live next to
 * server code are restated here.
 */
import type { Blocker } from '../../src/domain/blocker.js';
import type { ClusterQueueView } from '../../src/domain/cluster-queue.js';
import type { Job, JobEvent, JobResourceRef, JobState } from '../../src/domain/job.js';
import type { PoolFigures } from '../../src/domain/pool-figures.js';
import type { PriorityClass } from '../../src/domain/priority-class.js';
import type { Project, ProjectDetail } from '../../src/domain/project.js';
import type { Role } from '../../src/domain/roles.js';

export type {
  Blocker,
  ClusterQueueView,
  Job,
  JobEvent,
  JobResourceRef,
  JobState,
  PoolFigures,
  PriorityClass,
  Role,
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

export interface User {
  name: string;
  admin: boolean;
}

/** `GET /whoami`. Job and project tokens cannot use the dashboard. */
export type WhoAmI =
  | { kind: 'user'; name: string; admin: boolean; createdAt: string }
  | { kind: 'job'; job: number }
  | { kind: 'project-token'; project: string; job: number };

/** Jobs of a project by state (`jobCounts` of `GET /projects`). */
export type JobCounts = Record<JobState, number>;

export interface ProjectView extends Project {
  jobCounts?: JobCounts;
}

export interface ProjectDetailView extends ProjectDetail {
  /** The caller's role in the project; `admin` for global admins. */
  role: Role | 'admin';
  jobCounts?: JobCounts;
}

export interface ResourceTypeView extends PoolFigures {
  privilege: string | null;
}

export interface TargetView {
  name: string;
  factory: string;
  privilege: string | null;
  capacity: number;
  inUse: number;
  waiting: number;
}

/** `POST /projects/{name}/jobs`. */
export interface SubmitRequest {
  name?: string;
  command: string[];
  target?: string;
  requests?: Record<string, string>;
  resources?: string[];
  priority?: number | string;
}

export type JobSort = '-id' | 'id' | '-priority' | 'priority';

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

export interface Figures {
  clusterQueues: ClusterQueueView[];
  factories: PoolFigures[];
  resourceTypes: ResourceTypeView[];
}
