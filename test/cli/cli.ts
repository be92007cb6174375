/**
 * Runs the `berth` CLI as a real subprocess (TypeScript through tsx, so no build is needed) in a
 * sandbox: its own HOME, XDG config and state directories, working directory and environment —
 * nothing leaks in from the developer's shell.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const TSX = import.meta.resolve('tsx');
const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

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
  const root = mkdtempSync(join(tmpdir(), 'berth-cli-'));
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
}

export interface RunOptions {
  env?: Record<string, string>;
  cwd?: string;
  input?: string;
}

/** `berth ARGS…` in the sandbox; never rejects (the exit code is part of the result). */
export function berth(sb: Sandbox, args: string[], opts: RunOptions = {}): Promise<CliResult> {
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: sb.home,
    XDG_CONFIG_HOME: sb.config,
    XDG_STATE_HOME: sb.state,
    ...opts.env,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
      cwd: opts.cwd ?? sb.cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
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
