/**
 * A small typed client for `/api/v1`. The token lives in sessionStorage only (this tab, until it
 * closes); every failure becomes an ApiError carrying the server's own message.
 */
import type {
  ArrayView,
  ArtifactView,
  ClusterQueueView,
  Health,
  Job,
  JobAttempt,
  JobEvent,
  JobPage,
  JobSort,
  JobState,
  PoolFigures,
  PriorityClass,
  ProjectDetailView,
  ProjectView,
  QueueHistoryView,
  ResourceTypeView,
  SubmitRequest,
  TargetView,
  UsageReport,
  User,
  WhoAmI,
} from './types.js';

export const API = '/api/v1';
const TOKEN_KEY = 'berth.token';
const USER_KEY = 'berth.user';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** What a page shows of a failed request: the API's status and message (0 for no answer). */
export function failureOf(e: unknown): { status: number; message: string } {
  return e instanceof ApiError ? { status: e.status, message: e.message } : { status: 0, message: String(e) };
}

export interface Session {
  token: string;
  user: User;
}

export function loadSession(): Session | null {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const user = sessionStorage.getItem(USER_KEY);
  if (!token || !user) return null;
  try {
    const parsed = JSON.parse(user) as Partial<User>;
    if (typeof parsed.name !== 'string') return null;
    return { token, user: { name: parsed.name, admin: parsed.admin === true } };
  } catch {
    return null;
  }
}

function saveSession(s: Session): void {
  sessionStorage.setItem(TOKEN_KEY, s.token);
  sessionStorage.setItem(USER_KEY, JSON.stringify(s.user));
}

export function clearSession(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(USER_KEY);
}

export const currentToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);

/** Called when the server no longer accepts the token (the app signs out). */
let onUnauthorized: (message: string) => void = () => undefined;
export function setUnauthorizedHandler(fn: (message: string) => void): void {
  onUnauthorized = fn;
}
export const unauthorized = (message: string): void => onUnauthorized(message);

interface ErrorBody {
  error?: { code?: string; message?: string };
}

/** The ApiError of a failed response, with the server's `{error: {code, message}}` when it has one. */
export async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http_' + String(res.status);
  let message = `${res.status} ${res.statusText || 'error'}`;
  try {
    const body = (await res.json()) as ErrorBody;
    if (body.error?.message) message = body.error.message;
    if (body.error?.code) code = body.error.code;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, code, message);
}

type Query = Record<string, string | number | undefined | null>;

function url(path: string, query?: Query): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {}))
    if (v !== undefined && v !== null) params.set(k, String(v));
  const qs = params.toString();
  return API + path + (qs ? '?' + qs : '');
}

interface Options {
  method?: 'GET' | 'POST';
  query?: Query;
  body?: unknown;
  signal?: AbortSignal;
  /** Token to use instead of the session's (signing in). */
  token?: string;
}

async function send(path: string, o: Options = {}): Promise<Response> {
  const token = o.token ?? currentToken();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url(path, o.query), {
      method: o.method ?? 'GET',
      headers,
      body: o.body === undefined ? null : JSON.stringify(o.body),
      signal: o.signal ?? null,
    });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
  }
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && o.token === undefined) onUnauthorized(err.message);
    throw err;
  }
  return res;
}

async function json<T>(path: string, o?: Options): Promise<T> {
  const res = await send(path, o);
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

/**
 * What a browser's WebSocket offers as its subprotocols, since it cannot send an Authorization
 * header: berth's own, which the server selects, and the token, base64url-encoded without padding
 * (the server's side: src/api/socket-token.ts).
 */
export function socketProtocols(token: string): string[] {
  let binary = '';
  for (const byte of new TextEncoder().encode(token)) binary += String.fromCharCode(byte);
  const base64url = btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  return ['berth.exec.v1', `base64url.bearer.authorization.berth.${base64url}`];
}

/** The WebSocket address of `path` (with its query) under the API, on this page's host. */
export function socketUrl(path: string): string {
  const u = new URL(API + path, location.href);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

/**
 * Why the server refused the WebSocket at `path`, which a browser does not tell: the same request
 * as a plain GET, with the token, is refused the same way with its message. Undefined when that
 * says nothing (a GET that passes every check is answered 404 with no body: only an upgrade runs).
 */
export async function socketRefusal(path: string): Promise<string | undefined> {
  try {
    await send(path);
  } catch (e) {
    if (e instanceof ApiError && e.code !== 'http_404') return e.message;
  }
  return undefined;
}

/** Checks a token and, when it is a user's, keeps it for this tab. */
export async function signIn(token: string): Promise<Session> {
  const who = await json<WhoAmI>('/whoami', { token });
  if (who.kind !== 'user')
    throw new ApiError(403, 'forbidden', 'This is a job token; sign in with a user token.');
  const session = { token, user: { name: who.name, admin: who.admin } };
  saveSession(session);
  return session;
}

export interface JobListQuery {
  states: JobState[];
  sort: JobSort;
  cursor: string | null;
  limit: number;
  /** Each job array as one entry, its first task with `array` set. */
  collapse?: boolean;
  /** Only this array's tasks. */
  array?: number;
}

export const api = {
  health: (signal?: AbortSignal) => json<Health>('/health', { signal }),
  clusterQueues: (signal?: AbortSignal) => json<ClusterQueueView[]>('/cluster-queues', { signal }),
  /** A cluster queue's figures over the last `minutes`, oldest first. */
  queueHistory: (name: string, minutes: number, signal?: AbortSignal) =>
    json<QueueHistoryView>(`/cluster-queues/${enc(name)}/history`, { signal, query: { minutes } }),
  /** The usage ledger summed `by` project (queue, user) since `since` ago ("24h", "7d", "30d"). */
  usage: (by: string, since: string, signal?: AbortSignal) =>
    json<UsageReport>('/usage', { signal, query: { by, since } }),
  factories: (signal?: AbortSignal) => json<PoolFigures[]>('/factories', { signal }),
  resourceTypes: (signal?: AbortSignal) => json<ResourceTypeView[]>('/resource-types', { signal }),
  targets: (signal?: AbortSignal) => json<TargetView[]>('/targets', { signal }),
  priorityClasses: (signal?: AbortSignal) => json<PriorityClass[]>('/priority-classes', { signal }),
  projects: (signal?: AbortSignal) => json<ProjectView[]>('/projects', { signal }),
  project: (name: string, signal?: AbortSignal) =>
    json<ProjectDetailView>(`/projects/${enc(name)}`, { signal }),
  job: (id: number, signal?: AbortSignal) => json<Job>(`/jobs/${id}`, { signal }),
  jobEvents: (id: number, signal?: AbortSignal) => json<JobEvent[]>(`/jobs/${id}/events`, { signal }),
  jobAttempts: (id: number, signal?: AbortSignal) => json<JobAttempt[]>(`/jobs/${id}/attempts`, { signal }),
  /** One attempt's output, whole (a finished attempt's does not grow). */
  async attemptLog(id: number, attempt: number, signal?: AbortSignal): Promise<string> {
    return (await send(`/jobs/${id}/logs`, { signal, query: { attempt } })).text();
  },
  cancelJob: (id: number) => json<Job>(`/jobs/${id}/cancel`, { method: 'POST' }),
  /** Every artifact of the job: the list comes a page at a time (X-Next-Cursor), all pages read. */
  async artifacts(id: number, signal?: AbortSignal): Promise<ArtifactView[]> {
    const all: ArtifactView[] = [];
    let cursor: string | undefined;
    do {
      const res = await send(`/jobs/${id}/artifacts`, { signal, query: { limit: 1000, cursor } });
      all.push(...((await res.json()) as ArtifactView[]));
      cursor = res.headers.get('x-next-cursor') || undefined;
    } while (cursor !== undefined);
    return all;
  },
  /** An artifact's bytes (fetched with the token: a plain link could not send it). */
  async artifactBlob(id: number, a: Pick<ArtifactView, 'name' | 'attempt'>): Promise<Blob> {
    const name = a.name.split('/').map(enc).join('/');
    const res = await send(`/jobs/${id}/artifacts/${name}`, { query: { attempt: a.attempt } });
    return res.blob();
  },
  array: (id: number, signal?: AbortSignal) => json<ArrayView>(`/arrays/${id}`, { signal }),
  arrayTask: (id: number, index: number, signal?: AbortSignal) =>
    json<Job>(`/arrays/${id}/tasks/${index}`, { signal }),
  /** Cancels every unfinished task of the array (member). */
  cancelArray: (id: number) => json<ArrayView>(`/arrays/${id}/cancel`, { method: 'POST' }),
  submit: (project: string, body: SubmitRequest) =>
    json<Job>(`/projects/${enc(project)}/jobs`, { method: 'POST', body }),

  async jobs(project: string, q: JobListQuery, signal?: AbortSignal): Promise<JobPage> {
    const res = await send(`/projects/${enc(project)}/jobs`, {
      signal,
      query: {
        limit: q.limit,
        state: q.states.length > 0 ? q.states.join(',') : undefined,
        // The default order is left implicit, so the first page asks only what any server knows.
        sort: q.sort === '-id' ? undefined : q.sort,
        cursor: q.cursor,
        collapse: q.collapse ? 'true' : undefined,
        array: q.array,
      },
    });
    const jobs = (await res.json()) as Job[];
    const total = res.headers.get('x-total-count');
    return {
      jobs,
      total: total === null || total === '' || !Number.isFinite(Number(total)) ? null : Number(total),
      nextCursor: res.headers.get('x-next-cursor') || null,
    };
  },
};
