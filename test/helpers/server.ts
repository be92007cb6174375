/**
 * A real berth server for end-to-end tests: real SQLite file in a fresh temp directory, real
 * HTTP on a free port. One per test file (or per test when isolation matters).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../src/server/run.js';

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

export async function startTestServer(opts: { configFile?: string } = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-test-'));
  const server = await startServer({
    dataDir,
    listen: '127.0.0.1:0',
    configFile: opts.configFile ?? '/dev/null',
    print: () => {},
  });
  const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return {
    url: server.url,
    api: `${server.url}/api/v1`,
    dataDir,
    adminToken,
    server,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
  text: string;
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
  return { status: res.status, body: parsed as T, text };
}
