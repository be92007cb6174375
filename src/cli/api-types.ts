/**
 * The shapes the API answers with, as the CLI reads them (JSON: dates are ISO strings). The view
 * types live in src/domain next to their concepts; this file only gathers them for the CLI.
 */
import type { User } from '../domain/user.js';

export type { ClusterQueueView } from '../domain/cluster-queue.js';
export type { Job, JobEvent, PendingEntry } from '../domain/job.js';
export type { PriorityClass } from '../domain/priority-class.js';
export type { Project, ProjectDetail, ProjectDetailView, ProjectView } from '../domain/project.js';
export type { User, WhoAmI } from '../domain/user.js';
export type { CreatedUser, NewTokenView, TokenView } from '../domain/tokens.js';
export type { AuditEntry } from '../domain/audit.js';

/** `POST /users/{name}/tokens`: a token, shown once. */
export interface NewToken {
  name: string;
  token: string;
}

/** `POST /users`: the new user with its first token. */
export type NewUser = User & NewToken;
