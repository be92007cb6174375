/**
 * Runs the `berth` CLI as a real subprocess (the build when it is fresh, else the sources through
 * tsx: helpers/berth-command.ts) in a sandbox: its own HOME, XDG config and state directories, working directory and environment —
 * nothing leaks in from the developer's shell.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { after, before } from 'node:test';
import { parse } from 'yaml';
import { call, useTestServer, type StartOptions, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { BERTH_ARGS } from '../helpers/berth-command.js';

export interface Sandbox {
  root: string;
  home: string;
  config: string;
  state: string;
  /** An empty working directory (no ./.berth). */
  cwd: string;
  configFile: string;
  remove(): void;
}

export function sandbox(): Sandbox {
  const root = scratchDir('berth-cli-');
  const dirs = {
    home: join(root, 'home'),
    config: join(root, 'config'),
    state: join(root, 'state'),
    cwd: join(root, 'cwd'),
  };
  for (const d of Object.values(dirs)) mkdirSync(d);
  return {
    root,
    ...dirs,
    configFile: join(dirs.config, 'berth', 'config.yaml'),
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout as written, not decoded (a log need not be UTF-8). */
  stdoutBytes: Buffer;
}

export interface RunOptions {
  env?: Record<string, string>;
  cwd?: string;
  input?: string;
}

/** A `berth ARGS…` process in the sandbox; its output collects in `out` as it comes. */
function spawnBerth(sb: Sandbox, args: string[], opts: RunOptions, stdin: 'pipe' | 'ignore') {
  const child = spawn(process.execPath, [...BERTH_ARGS, ...args], {
    cwd: opts.cwd ?? sb.cwd,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: sb.home,
      XDG_CONFIG_HOME: sb.config,
      XDG_STATE_HOME: sb.state,
      ...opts.env,
    },
    stdio: [stdin, 'pipe', 'pipe'],
  });
  const { stdout, stderr } = child;
  assert.ok(stdout && stderr, 'berth runs with piped output');
  const out = { stdout: '', stderr: '' };
  const bytes: Buffer[] = [];
  const decoder = new StringDecoder('utf8');
  stdout.on('data', (d: Buffer) => {
    bytes.push(d);
    out.stdout += decoder.write(d);
  });
  stderr.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exit = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      out.stdout += decoder.end();
      resolve({ code, ...out, stdoutBytes: Buffer.concat(bytes) });
    });
  });
  return { child, out, exit };
}

/** `berth ARGS…` in the sandbox; never rejects (the exit code is part of the result). */
export function berth(sb: Sandbox, args: string[], opts: RunOptions = {}): Promise<CliResult> {
  const { child, exit } = spawnBerth(sb, args, opts, 'pipe');
  child.stdin?.end(opts.input ?? '');
  return exit;
}

/** The processes of `startBerth` still running (`useCliServer` kills them after the tests). */
const started = new Set<ChildProcess>();

export interface RunningBerth {
  exit: Promise<CliResult>;
  signal(signal: NodeJS.Signals): boolean;
  /** Resolves once `text` has appeared on the stream. */
  shows(stream: 'stdout' | 'stderr', text: string): Promise<true>;
  /** What it has written so far. */
  out(): { stdout: string; stderr: string };
}

/** `berth ARGS…` left running, its output readable while it runs. */
export function startBerth(sb: Sandbox, args: string[], opts: Omit<RunOptions, 'input'> = {}): RunningBerth {
  const { child, out, exit } = spawnBerth(sb, args, opts, 'ignore');
  started.add(child);
  child.on('close', () => started.delete(child));
  return {
    exit,
    signal: (signal) => child.kill(signal),
    out: () => ({ ...out }),
    shows: (stream, text) =>
      waitFor(`${JSON.stringify(text)} on the ${stream} of berth ${args.join(' ')}`, () =>
        out[stream].includes(text),
      ),
  };
}

/** `berth ARGS…` against a server with a token; `env` adds to (or overrides) BERTH_URL and BERTH_TOKEN. */
export type Runner = (args: string[], env?: Record<string, string>) => Promise<CliResult>;

/** A server and a sandbox for the CLI tests of a file, as `useCliServer` gives them. */
export interface CliServer {
  /** The running server (available from the `before` hook on). */
  readonly server: TestServer;
  readonly sb: Sandbox;
  /** BERTH_URL and BERTH_TOKEN for `token` (by default the admin's). */
  readonly connection: (token?: string) => Record<string, string>;
  /** `berth` as the holder of `token`. */
  readonly as: (token: string) => Runner;
  /** `berth` as the admin. */
  readonly admin: Runner;
  /** An API call as the admin that must succeed (a status below 300); returns the body. */
  readonly request: <T = unknown>(method: string, path: string, body?: unknown) => Promise<T>;
}

/**
 * Registers `before` and `after` hooks in the current file: a fresh server (started with `opts`, as
 * `startTestServer` takes them) and sandbox, then `setup`; after the tests, whatever `startBerth`
 * left running is killed and both are removed.
 */
export function useCliServer(setup?: (s: CliServer) => Promise<void>, opts: StartOptions = {}): CliServer {
  let sb: Sandbox | undefined;
  // Registered before the server's hooks, so that they run first: the sandbox is there for
  // `setup`, and what runs in it is killed before the server goes.
  before(() => {
    sb = sandbox();
  });
  after(() => {
    for (const child of started) child.kill('SIGKILL');
    sb?.remove();
  });
  const server = useTestServer(opts, async () => {
    await setup?.(s);
  });
  const s: CliServer = {
    get server() {
      return server();
    },
    get sb() {
      assert.ok(sb, 'the sandbox has not been made');
      return sb;
    },
    connection: (token) => ({ BERTH_URL: server().url, BERTH_TOKEN: token ?? server().adminToken }),
    as: (token) => (args, env) => berth(s.sb, args, { env: { ...s.connection(token), ...env } }),
    admin: (args, env) => s.as(server().adminToken)(args, env),
    request: async <T>(method: string, path: string, body?: unknown) => {
      const r = await call<T>(server().api, server().adminToken, method, path, body);
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
      return r.body;
    },
  };
  return s;
}

/** Success: exit 0 and nothing on stderr. */
export function ok(r: CliResult): string {
  assert.equal(r.stderr, '', `unexpected stderr: ${r.stderr}`);
  assert.equal(r.code, 0, `exit code ${r.code}; stdout: ${r.stdout}`);
  return r.stdout;
}

/** Failure: the given exit code, nothing on stdout, exactly one line `berth: …` on stderr. */
export function fails(r: CliResult, code: number, message: RegExp): string {
  assert.equal(r.code, code, `exit code ${r.code}; stdout: ${r.stdout}; stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^berth: [^\n]+\n$/, `not one line: ${JSON.stringify(r.stderr)}`);
  assert.match(r.stderr, message);
  return r.stderr;
}

/** Several independent failing runs, started together; each checked as by `fails`. */
export async function allFail(
  cases: [run: Promise<CliResult>, code: number, message: RegExp][],
): Promise<void> {
  const results = await Promise.all(cases.map(([run]) => run));
  results.forEach((r, i) => fails(r, cases[i]![1], cases[i]![2]));
}

/** Parses `-o json` output. */
export function parseJson<T>(r: CliResult): T {
  return JSON.parse(ok(r)) as T;
}

/** A table's rows as arrays of cells (split on runs of two or more spaces), header included. */
export function rows(out: string): string[][] {
  return out
    .trimEnd()
    .split('\n')
    .map((line) => line.split(/ {2,}/));
}

/** The row whose cell in column `column` equals `value`. */
export function row(out: string, column: string, value: string): Record<string, string> {
  const [header = [], ...body] = rows(out);
  const i = header.indexOf(column);
  assert.ok(i >= 0, `no column ${column} in ${JSON.stringify(header)}`);
  const found = body.find((r) => r[i] === value);
  assert.ok(found, `no row with ${column} = ${value} in:\n${out}`);
  return Object.fromEntries(header.map((h, j) => [h, found[j] ?? '']));
}

/** `key: value` lines as a map. */
export function keyValues(out: string): Record<string, string> {
  return Object.fromEntries(
    out
      .trimEnd()
      .split('\n')
      .filter((l) => /^\S[^:]*:/.test(l))
      .map((l) => {
        const i = l.indexOf(':');
        return [l.slice(0, i), l.slice(i + 1).trim()];
      }),
  );
}

/** A local port nothing listens on: bound, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return address.port;
}

export interface SavedConfig {
  current?: string;
  contexts: Record<string, Record<string, string>>;
}

/** The sandbox's CLI config file, parsed. */
export const readConfig = (sb: Sandbox): SavedConfig =>
  parse(readFileSync(sb.configFile, 'utf8')) as SavedConfig;

/**
 * The bound on a CLI suite, the sum of its tests, against a hang (a job that never ends): 50 s on
 * a quiet machine, over 120 s (the bound before) once in CI's six runs side by side on two cores.
 * Each wait inside has its own deadline (helpers/wait.ts).
 */
export const SUITE_TIMEOUT_MS = 600_000;
