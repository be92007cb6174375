/**
 * A real berth server for end-to-end tests: real SQLite file in a fresh temp directory, real
 * HTTP on a free port. One per test file (or per test when isolation matters).
 */
import { request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { startServer, type RunningServer } from '../../src/server/run.js';
import { serverDatabase } from './store.js';

// A server announces itself in the user's state directory for CLI discovery; tests must never
// touch the developer's real one.
process.env.XDG_STATE_HOME ??= mkdtempSync(join(tmpdir(), 'berth-test-state-'));

export interface TestServer {
  url: string;
  api: string;
  dataDir: string;
  adminToken: string;
  server: RunningServer;
  close(): Promise<void>;
}

/**
 * A config with a local factory that runs `capacity` jobs at once and stops them quickly: what the
 * tests that run real jobs use.
 */
export function localFactoryConfig(capacity = 8): string {
  return [
    'graceSeconds: 1',
    'heartbeatSeconds: 10',
    'factories:',
    `  local: { kind: local, capacity: ${capacity} }`,
    'targets:',
    '  local: { factory: local }',
  ].join('\n');
}

export interface StartOptions {
  /** The server's config file. */
  configFile?: string;
  /** The text of a config file, written to a temporary file that `close()` removes. */
  config?: string;
  /**
   * Keep the API's rate limit per token (from the config, else the default). Off otherwise: tests
   * fire requests in bursts from one token, and a 429 there would be noise, not a finding.
   */
  rateLimited?: boolean;
  /** How long the server lets requests in flight finish when it stops (the server's default else). */
  requestsGraceMs?: number;
}

/** A server with no config (/dev/null) unless `opts` gives one. */
export async function startTestServer(opts: StartOptions = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-test-'));
  const configDir = opts.config === undefined ? undefined : mkdtempSync(join(tmpdir(), 'berth-test-config-'));
  const remove = () => {
    rmSync(dataDir, { recursive: true, force: true });
    if (configDir !== undefined) rmSync(configDir, { recursive: true, force: true });
  };
  let configFile = opts.configFile ?? '/dev/null';
  if (configDir !== undefined) {
    configFile = join(configDir, 'berth.yaml');
    writeFileSync(configFile, opts.config ?? '');
  }
  const database = await serverDatabase(dataDir);
  let server: RunningServer;
  try {
    server = await startServer({
      dataDir,
      listen: '127.0.0.1:0',
      configFile,
      database: database?.url,
      print: () => {},
      ...(opts.rateLimited ? {} : { requestsPerSecond: 0, jobRequestsPerSecond: 0 }),
      requestsGraceMs: opts.requestsGraceMs,
    });
  } catch (e) {
    remove();
    await database?.drop();
    throw e;
  }
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return {
    url: server.url,
    api: `${server.url}/api/v1`,
    dataDir,
    adminToken,
    server,
    async close() {
      await server.close();
      remove();
      await database?.drop();
    },
  };
}

/**
 * Registers `before` and `after` hooks in the current file or suite: a fresh server (started with
 * `opts`), then `setup`; the server is closed after the tests. Returns the server's getter.
 */
export function useTestServer(opts: StartOptions = {}, setup?: () => Promise<void>): () => TestServer {
  let server: TestServer | undefined;
  before(async () => {
    server = await startTestServer(opts);
    await setup?.();
  });
  after(() => server?.close());
  return () => {
    if (!server) throw new Error('the test server has not started');
    return server;
  };
}

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** One HTTP call with a bearer token; parses JSON when the server sent JSON. */
export async function call<T = unknown>(
  base: string,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse<T>> {
  const init: RequestInit = {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  };
  const res = await fetch(base + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) parsed = JSON.parse(text);
  return { status: res.status, body: parsed as T, text, headers: res.headers };
}

/** An admin's call to `s` that must succeed (a status below 300); its body. */
export function adminOf(s: TestServer): <T>(method: string, path: string, body?: unknown) => Promise<T> {
  return async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const r = await call<T>(s.api, s.adminToken, method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
}

/**
 * A POST with a bearer token sent from `localAddress` (any of 127.0.0.0/8 on Linux), for what the
 * server records of a request's address: fetch cannot choose where a request comes from.
 */
export function postFrom(
  localAddress: string,
  url: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', localAddress, headers: { authorization: `Bearer ${token}`, ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}
