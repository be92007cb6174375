/**
 * wrk (Debian's HTTP load generator) driving JSON POSTs: a C client with an event loop per
 * thread costs a fraction of a Node client's CPU per request, so on this two-core machine the
 * figure it gives is the server's, not the load generator's. Installed with apt-get when missing
 * (as root), as scripts/slurm/cluster.sh installs Slurm.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkOptions {
  connections: number;
  threads: number;
  seconds: number;
  /** Bearer token, if any. */
  token?: string;
}

export interface WrkResult {
  requestsPerSecond: number;
  requests: number;
  /** Answers outside 2xx/3xx, and socket errors: a benchmark with either is not a figure. */
  non2xx: number;
  socketErrors: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
}

/** wrk's path, installing Debian's package first when it is missing. */
export function ensureWrk(): string {
  const find = () => {
    try {
      return execFileSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).trim();
    } catch {
      return '';
    }
  };
  let path = find();
  if (path) return path;
  if (process.getuid?.() !== 0)
    throw new Error('wrk is missing: install it (apt-get install wrk) and run again');
  console.error('  installing wrk (apt-get install wrk)…');
  execFileSync('apt-get', ['install', '-y', '-q', 'wrk'], { stdio: ['ignore', 'ignore', 'inherit'] });
  path = find();
  if (!path) throw new Error('apt-get install wrk did not install wrk');
  return path;
}

/** A Lua string literal for any text (long brackets, with a level the text does not contain). */
function luaString(text: string): string {
  let level = '';
  while (text.includes(`]${level}]`)) level += '=';
  return `[${level}[${text}]${level}]`;
}

const MS = { us: 1e-3, ms: 1, s: 1e3 } as const;
const millis = (value: string, unit: string): number => Number(value) * (MS[unit as keyof typeof MS] ?? NaN);

/** POSTs `body` to `url` for `seconds`, as fast as the server answers. */
export async function wrkPost(url: string, body: unknown, opts: WrkOptions): Promise<WrkResult> {
  const wrk = ensureWrk();
  const dir = mkdtempSync(join(tmpdir(), 'berth-wrk-'));
  try {
    const script = join(dir, 'post.lua');
    writeFileSync(
      script,
      [
        'wrk.method = "POST"',
        `wrk.body = ${luaString(JSON.stringify(body))}`,
        'wrk.headers["Content-Type"] = "application/json"',
        ...(opts.token ? [`wrk.headers["Authorization"] = ${luaString(`Bearer ${opts.token}`)}`] : []),
      ].join('\n'),
    );
    const { stdout } = await run(
      wrk,
      [
        `-c${opts.connections}`,
        `-t${opts.threads}`,
        `-d${opts.seconds}s`,
        '--latency',
        '--timeout',
        '10s',
        '-s',
        script,
        url,
      ],
      { maxBuffer: 1 << 20 },
    );
    return parseWrk(stdout);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The figures of wrk's report (its text output: wrk has no machine-readable one). */
export function parseWrk(out: string): WrkResult {
  const num = (re: RegExp): number => Number(re.exec(out)?.[1] ?? 0);
  const latency = (p: string): number => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
    return m ? millis(m[1]!, m[2]!) : NaN;
  };
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  if (!rps) throw new Error(`wrk printed no Requests/sec:\n${out}`);
  return {
    requestsPerSecond: Number(rps[1]),
    requests: num(/(\d+) requests in/),
    non2xx: num(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    latencyP50Ms: latency('50'),
    latencyP99Ms: latency('99'),
  };
}
