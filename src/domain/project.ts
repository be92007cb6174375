/** Projects: the namespace every job lives in, bound to exactly one cluster queue. */
import type { JobState } from './job.js';
import type { Role } from './roles.js';

/** What the controller needs of a project for its queued jobs: where they queue, what it may use. */
export interface ProjectAccess {
  name: string;
  clusterQueue: string;
  privileges: string[];
}

export interface Project {
  name: string;
  description: string;
  tags: string[];
  clusterQueue: string;
  active: boolean;
  /** Fair-share weight in its cluster queue (default 1): weight 2 gets twice the share of 1. */
  weight: number;
  /**
   * The most of its jobs that may be queued at once (waiting for admission); a submission past it
   * gets 429. Null: its cluster queue's `maxQueuedPerProject`, if that is set.
   */
  maxQueued: number | null;
  createdAt: string;
  updatedAt: string;
}

export interface ProjectMember {
  user: string;
  role: Role;
}

export interface ProjectDetail extends Project {
  members: ProjectMember[];
  privileges: string[];
}

/** How many of a project's jobs are in each state. */
export type JobCounts = Record<JobState, number>;

/** A project as `GET /projects` lists it: with how many of its jobs are in each state. */
export interface ProjectView extends Project {
  jobCounts: JobCounts;
}

/**
 * A project as `GET /projects/{name}` shows it: members, privileges, the caller's role and job
 * counts. (Creating, changing and the member and privilege calls answer with a plain ProjectDetail.)
 */
export interface ProjectDetailView extends ProjectDetail {
  /** The caller's role in the project; `admin` for global admins. */
  role: Role | 'admin';
  jobCounts: JobCounts;
}

/**
 * The least fair-share weight, as the API's most is 1,000,000. The schema asks only for more than
 * 0, which a subnormal number such as 5e-324 is; but a project's share is divided by its weight,
 * and divided by that it is Infinity: the project would count as weight 0.
 */
export const MIN_PROJECT_WEIGHT = 0.000001;

/** The largest maxQueued (a project's or a queue's per project): it fits a 32-bit integer column. */
export const MAX_QUEUED_LIMIT = 1_000_000_000;
