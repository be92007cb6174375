/**
 * Shell completion, the I/O part: the names a kind of value can take, asked of the server through
 * the CLI's usual connection (context, BERTH_URL/BERTH_TOKEN, a local server). A shell waits for
 * this at every TAB, so each call has a short time limit, and any failure (no server, no token,
 * no right to see) gives no names rather than an error: commands and flags still complete.
 */
import type { ResourceTypeView, TargetView } from '../../domain/pool-figures.js';
import type { ClusterQueueView, Job, PriorityClass, ProjectView, User } from '../api-types.js';
import { apiPath, type ApiClient } from '../client.js';
import { loadConfig } from '../config.js';
import { clientFor, resolveConnection } from '../connection.js';
import type { NameKind } from './kinds.js';
import type { Candidate } from './words.js';

/** How long a TAB may wait for the server. */
export const LIVE_TIMEOUT_MS = 2000;
/** Job ids offered: the newest of the project. */
const JOB_LIMIT = 200;
const UNFINISHED = 'queued,admitted,running';

type Ask = <T>(path: string, query?: Record<string, string | number>) => Promise<T>;
type Lookup = (ask: Ask, project: string) => Promise<Candidate[]>;

const jobs =
  (state?: string): Lookup =>
  async (ask, project) =>
    (
      await ask<Job[]>(apiPath`/projects/${project}/jobs`, {
        limit: JOB_LIMIT,
        ...(state ? { state } : {}),
      })
    ).map((j) => ({ value: String(j.id), description: `${j.name} (${j.state})` }));

/** Where each kind of name comes from, and what describes each one. */
const SERVER_LOOKUPS: Record<Exclude<NameKind, 'context'>, Lookup> = {
  project: async (ask) =>
    (await ask<ProjectView[]>('/projects')).map((p) => ({
      value: p.name,
      description: p.description || `cluster queue ${p.clusterQueue}`,
    })),
  queue: async (ask) =>
    (await ask<ClusterQueueView[]>('/cluster-queues')).map((q) => ({
      value: q.name,
      description: `${q.pending} pending, ${q.admitted} admitted`,
    })),
  target: async (ask) =>
    (await ask<TargetView[]>('/targets')).map((t) => ({
      value: t.name,
      description: `factory ${t.factory}`,
    })),
  priority: async (ask) =>
    (await ask<PriorityClass[]>('/priority-classes')).map((c) => ({
      value: c.name,
      description: `${c.value}${c.description ? ` ${c.description}` : ''}`,
    })),
  resource: async (ask) =>
    (await ask<ResourceTypeView[]>('/resource-types')).map((r) => ({ value: r.name, description: r.kind })),
  user: async (ask) =>
    (await ask<User[]>('/users')).map((u) => ({
      value: u.name,
      ...(u.admin ? { description: 'admin' } : {}),
    })),
  job: jobs(),
  'unfinished-job': jobs(UNFINISHED),
};

/** The contexts of the user's config file: no server needed. */
const contexts = (): Candidate[] => Object.keys(loadConfig().contexts).map((value) => ({ value }));

/**
 * The names of `kind`; `project` is `--project` as given on the command line, if it was (the job
 * ids offered are that project's). Never throws.
 */
export async function liveNames(
  kind: NameKind,
  project: string | undefined,
  timeoutMs = LIVE_TIMEOUT_MS,
): Promise<Candidate[]> {
  try {
    if (kind === 'context') return contexts();
    const connection = resolveConnection({ project });
    const client: ApiClient = clientFor(connection);
    const ask: Ask = (path, query) => client.get(path, { timeoutMs, ...(query ? { query } : {}) });
    return await SERVER_LOOKUPS[kind](ask, connection.project);
  } catch {
    return [];
  }
}
