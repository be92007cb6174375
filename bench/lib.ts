/** Shared bench helpers: a berth server in a child process, and HTTP calls. */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

export interface BenchServer {
  api: string;
  token: string;
  dataDir: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const MAIN = join(import.meta.dirname, '..', 'src', 'cli', 'main.ts');

/** Starts `berth server` as its own process (so it has a core to itself) with `config` YAML. */
export async function startBenchServer(config: string): Promise<BenchServer> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-'));
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, config);
  const dataDir = join(dir, 'data');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MAIN,
      'server',
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--config',
      configFile,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 30_000;
  let url: string | undefined;
  while (!(url = /listening on (http:\S+)/.exec(out)?.[1])) {
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await delay(20);
  }
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return {
    api: `${url}/api/v1`,
    token,
    dataDir,
    child,
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

// node:http with keep-alive: fetch() costs several times more CPU per request, and the load
// generator must not be the bottleneck it measures.
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

export function post(api: string, token: string, path: string, body: unknown): Promise<unknown> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      api + path,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if ((res.statusCode ?? 500) >= 300) reject(new Error(`${path}: ${res.statusCode} ${text}`));
          else resolve(JSON.parse(text) as unknown);
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

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits });
