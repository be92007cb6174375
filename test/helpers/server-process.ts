/** A berth server as a real child process, for tests that kill it (kill -9) and restart it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BERTH_ARGS, BUILT_BERTH_ARGS } from './berth-command.js';
import { serverDatabase } from './store.js';
import { waitFor } from './wait.js';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  api: string;
  token: string;
  output(): string;
}

export interface SpawnOptions {
  /** The database URL (default: the suite's store for this data directory). */
  database?: string;
  /** The admin token, when another replica's data directory holds it. */
  token?: string;
  /** host:port to listen on (default: a free port); a restart on the same port keeps agents' URL. */
  listen?: string;
  /** Keep the rate limit per token (the config's, else the default); off otherwise, as in-process. */
  rateLimited?: boolean;
  /**
   * Run the compiled server (dist/, as `berth server` runs for users) instead of the sources
   * under tsx: benchmarks measure what users run (`npm run bench` builds it first).
   */
  built?: boolean;
  /** More environment for the server (BERTH_TEST_MIGRATIONS plays an older berth). */
  env?: NodeJS.ProcessEnv;
  /** Told the process at once, before it listens (to kill one that never does). */
  onSpawn?: (child: ChildProcess) => void;
}

export async function spawnServer(
  dataDir: string,
  configFile = '/dev/null',
  opts: SpawnOptions = {},
): Promise<ServerProcess> {
  const database = opts.database ? { url: opts.database } : await serverDatabase(dataDir);
  const child = spawn(
    process.execPath,
    [
      ...(opts.built ? BUILT_BERTH_ARGS : BERTH_ARGS),
      'server',
      '--data-dir',
      dataDir,
      '--listen',
      opts.listen ?? '127.0.0.1:0',
      '--config',
      configFile,
      ...(database ? ['--database', database.url] : []),
      ...(opts.rateLimited ? [] : ['--rate-limit', '0', '--job-rate-limit', '0']),
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
    },
  );
  opts.onSpawn?.(child);
  let out = '';
  // BERTH_SERVER_LOG=FILE keeps what the server prints (benchmarks and hung tests, for a post-mortem).
  const log = process.env.BERTH_SERVER_LOG;
  const keep = (d: Buffer) => {
    out += d.toString();
    if (log) appendFileSync(log, d);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const url = await waitFor(
    `server to listen (output so far: ${out})`,
    () => /listening on (http:\S+)/.exec(out)?.[1],
  );
  const token = opts.token ?? readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return { child, url, api: `${url}/api/v1`, token, output: () => out };
}

export async function killHard(p: ServerProcess): Promise<void> {
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGKILL');
  await exited;
}
