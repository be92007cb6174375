/** The shapes the API answers with, as the CLI reads them (JSON: dates are ISO strings). */
import type { ClusterQueueView } from '../domain/cluster-queue.js';
import type { Job, JobEvent } from '../domain/job.js';
import type { PriorityClass } from '../domain/priority-class.js';
import type { Project, ProjectDetail } from '../domain/project.js';
import type { Role } from '../domain/roles.js';
import type { User } from '../domain/user.js';

export type { Job, JobEvent, PriorityClass, Project, ProjectDetail, User };

export type WhoAmI =
  { kind: 'user'; name: string; admin: boolean; createdAt: string } | { kind: 'job'; job: string };

export interface ProjectView extends ProjectDetail {
  /** The caller's role in the project; `admin` for global admins. */
  role?: Role | 'admin';
}

export type QueueView = ClusterQueueView;

/** One entry of `GET /cluster-queues/{name}/pending`: a job, or its place when its project is not yours. */
export type PendingEntry =
  | { position: number; id: number; project: string; name: string; priority: number; createdAt: string }
  | { position: number; hidden: true };

export interface NewToken {
  name: string;
  token: string;
}

export type NewUser = User & NewToken;
