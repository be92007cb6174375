/**
 * Shared helpers for the end-to-end API tests: typed calls, error-shape assertions, and a small
 * world of users and projects to test role boundaries against.
 */
import assert from 'node:assert/strict';
import type { Db } from '../../src/store/store.js';
import { createHash } from 'node:crypto';
import {
  call,
  useTestServer,
  type ApiResponse,
  type StartOptions,
  type TestServer,
} from '../helpers/server.js';

export interface ErrorBody {
  error: { code: string; message: string };
}

export interface UserWithToken {
  id: number;
  name: string;
  admin: boolean;
  createdAt: string;
  token: string;
}

export interface ProjectBody {
  name: string;
  description: string;
  tags: string[];
  clusterQueue: string;
  active: boolean;
  members?: { user: string; role: string }[];
  privileges?: string[];
  role?: string;
}

export interface QueueBody {
  name: string;
  quota: Record<string, string>;
  cohort: string | null;
  borrowingLimit: Record<string, string>;
  lendingLimit: Record<string, string>;
  queueingStrategy: string;
  preemption: {
    withinClusterQueue: string;
    reclaimWithinCohort: string;
    borrowWithinCohort: { policy: string; maxPriorityThreshold: number | null };
    interactive?: string;
  };
  stopPolicy: string;
  maxQueuedPerProject: number | null;
  usage: Record<string, string>;
  pending: number;
}

/** Asserts the contract's error shape, the status and (optionally) what the message says. */
export function assertError(
  res: ApiResponse,
  status: number,
  code: string,
  message?: RegExp,
  label = '',
): ErrorBody {
  const where = `${label ? label + ': ' : ''}got ${res.status} ${res.text.slice(0, 300)}`;
  assert.equal(res.status, status, where);
  const body = res.body as ErrorBody;
  assert.equal(typeof body, 'object', where);
  assert.deepEqual(Object.keys(body), ['error'], where);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message'], where);
  assert.equal(body.error.code, code, where);
  assert.equal(typeof body.error.message, 'string', where);
  assert.ok(body.error.message.length > 0, where);
  if (message) assert.match(body.error.message, message, where);
  return body;
}

export function assertStatus(res: ApiResponse, status: number, label = ''): void {
  assert.equal(res.status, status, `${label ? label + ': ' : ''}got ${res.status} ${res.text.slice(0, 300)}`);
}

/** A server-bound caller: `api(token, method, path, body)`. */
export type Caller = <T = unknown>(
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<ApiResponse<T>>;

/** The server of a test file (or suite), as `useServer` gives it. */
export interface ApiServer {
  /** The running server (available from the `before` hook on). */
  readonly server: TestServer;
  /** The admin's token. */
  readonly admin: string;
  /** A caller bound to the server; it may be taken before the server starts. */
  readonly api: Caller;
}

/**
 * Registers `before` and `after` hooks in the current file or suite: a fresh server (started with
 * `opts`, as `startTestServer` takes them), `setup` run against it, and the server closed after the
 * tests.
 */
export function useServer(setup?: (s: ApiServer) => Promise<void>, opts: StartOptions = {}): ApiServer {
  const server = useTestServer(opts, async () => {
    await setup?.(s);
  });
  const s: ApiServer = {
    get server() {
      return server();
    },
    get admin() {
      return server().adminToken;
    },
    api: (token, method, path, body, headers) => call(server().api, token, method, path, body, headers),
  };
  return s;
}

export const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Runs `fn` on the server's own store (SQLite or PostgreSQL, whichever the suite runs on). */
export function withDb<T>(server: TestServer, fn: (db: Db) => Promise<T>): Promise<T> {
  return fn(server.server.context.store.db);
}

export async function createUser(api: Caller, adminToken: string, name: string, admin = false) {
  const res = await api<UserWithToken>(adminToken, 'POST', '/users', { name, admin });
  assertStatus(res, 201, `create user ${name}`);
  return res.body;
}

export async function createQueue(api: Caller, adminToken: string, name: string, body: object = {}) {
  const res = await api<QueueBody>(adminToken, 'POST', '/cluster-queues', {
    name,
    quota: { cpu: '4', memory: '8Gi' },
    ...body,
  });
  assertStatus(res, 201, `create queue ${name}`);
  return res.body;
}

export async function createProject(
  api: Caller,
  adminToken: string,
  name: string,
  clusterQueue: string,
  members: Record<string, string> = {},
) {
  const res = await api<ProjectBody>(adminToken, 'POST', '/projects', { name, clusterQueue });
  assertStatus(res, 201, `create project ${name}`);
  for (const [user, role] of Object.entries(members)) {
    assertStatus(
      await api(adminToken, 'PUT', `/projects/${name}/members/${user}`, { role }),
      200,
      `add ${user} to ${name}`,
    );
  }
  return res.body;
}

/** The actors of the role tests: an admin, a project's owner, member and viewer, and an outsider. */
export type Actor = 'admin' | 'owner' | 'member' | 'viewer' | 'outsider';
export const ACTORS: Actor[] = ['admin', 'owner', 'member', 'viewer', 'outsider'];

export interface World {
  tokens: Record<Actor, string>;
  /** Roles in every project made by `project()`. */
  roles: Record<string, string>;
  /** A fresh project on `queue`, with owner, member and viewer in their roles. */
  project(name: string): Promise<ProjectBody>;
}

export async function makeWorld(api: Caller, adminToken: string, queue: string): Promise<World> {
  const tokens: Record<Actor, string> = {
    admin: adminToken,
    owner: (await createUser(api, adminToken, 'olivia')).token,
    member: (await createUser(api, adminToken, 'mark')).token,
    viewer: (await createUser(api, adminToken, 'vera')).token,
    outsider: (await createUser(api, adminToken, 'otto')).token,
  };
  const roles = { olivia: 'owner', mark: 'member', vera: 'viewer' };
  return {
    tokens,
    roles,
    project: (name) => createProject(api, adminToken, name, queue, roles),
  };
}
