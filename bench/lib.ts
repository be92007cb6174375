/** Shared bench helpers: a berth server in a child process, and HTTP calls. */
import { Agent, request } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer } from '../test/helpers/server-process.js';
import { createTestDatabase } from '../test/helpers/store.js';

export interface BenchServer {
  api: string;
  token: string;
  /** Its data directory (berth.db there on SQLite). */
  dataDir: string;
  /** CPU seconds the server process has used so far (user + system). */
  cpuSeconds(): number;
  /** The server's process. */
  pid: number;
  stop(): Promise<void>;
}

/** CPU time of a process from /proc (Linux): utime + stime, in seconds. */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  return ticks / 100; // USER_HZ is 100 on Linux
}

/** The whole machine's CPU time from /proc/stat: busy and in all, in seconds of one CPU. */
export function machineCpuSeconds(): { busy: number; all: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  const all = ticks.reduce((a, b) => a + b, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0); // idle, iowait
  return { busy: (all - idle) / 100, all: all / 100 };
}

export type BenchStore = 'sqlite' | 'postgres';

const ROOT = join(import.meta.dirname, '..');

/**
 * The compiled server must be the sources' own: a benchmark of a stale dist/ would measure old
 * code. `npm run bench` compiles first; a bench file run on its own may find it stale.
 */
function assertBuilt(): void {
  const main = join(ROOT, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error('dist/ is missing: run npm run build (npm run bench does)');
  const built = statSync(main).mtimeMs;
  const newer = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).find(
    (f) => f.endsWith('.ts') && statSync(join(ROOT, 'src', f)).mtimeMs > built,
  );
  if (newer) throw new Error(`src/${newer} is newer than dist/: run npm run build (npm run bench does)`);
}

/**
 * Runs `start` with bench/cpu-profile.mjs preloaded into the processes it starts when
 * BENCH_PROFILE=DIR is set (through NODE_OPTIONS, which children such as the agent host inherit):
 * each writes DIR/server-PID.cpuprofile at its exit; `node bench/cpu-top.mjs FILE` reads one.
 */
export async function withProfiler<T>(start: () => Promise<T>): Promise<T> {
  const saved = process.env.NODE_OPTIONS;
  if (process.env.BENCH_PROFILE) {
    const preload = `--import ${new URL('./cpu-profile.mjs', import.meta.url).pathname}`;
    process.env.NODE_OPTIONS = `${saved ?? ''} ${preload}`.trim();
  }
  try {
    return await start();
  } finally {
    if (saved === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = saved;
  }
}

/**
 * Starts `berth server` as its own process (so it has a core to itself) with `config` YAML, on
 * SQLite (the default) or on a new PostgreSQL database on 127.0.0.1:5432, dropped at the end.
 * Without a rate limit unless `config` sets one: a load generator is one token by design. It runs
 * the compiled server (dist/), as users do: `npm run bench` compiles it first.
 */
export async function startBenchServer(config: string, store: BenchStore = 'sqlite'): Promise<BenchServer> {
  assertBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-'));
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(
    configFile,
    /^rateLimit:/m.test(config) ? config : `${config}\nrateLimit: { requestsPerSecond: 0 }\n`,
  );
  const database = store === 'postgres' ? await createTestDatabase() : undefined;
  const server = await withProfiler(() =>
    spawnServer(join(dir, 'data'), configFile, {
      database: database?.url ?? 'sqlite',
      rateLimited: true,
      built: true,
    }),
  );
  return {
    api: server.api,
    token: server.token,
    dataDir: join(dir, 'data'),
    cpuSeconds: () => processCpuSeconds(server.child.pid!),
    pid: server.child.pid!,
    async stop() {
      const exited = new Promise((r) => server.child.once('exit', r));
      server.child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

// node:http with keep-alive: fetch() costs several times more CPU per request, and the load
// generator must not be the bottleneck it measures.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

/** POSTs `body` as JSON, or a Buffer as it is (`contentType`); resolves with the parsed answer. */
export function post(
  api: string,
  token: string,
  path: string,
  body: unknown,
  contentType = 'application/json',
): Promise<unknown> {
  const payload = Buffer.isBuffer(body) ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      api + path,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': contentType,
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 500) >= 300) reject(new Error(`${path}: ${res.statusCode} ${text}`));
          else resolve(text === '' ? undefined : (JSON.parse(text) as unknown));
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

export async function get<T>(api: string, token: string, path: string): Promise<T> {
  const res = await fetch(api + path, { headers: { authorization: `Bearer ${token}` } });
  return (await res.json()) as T;
}

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(
  n: number,
  concurrency: number,
  task: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** Deterministic PRNG (mulberry32), so that every run seeds the same workload. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits });
