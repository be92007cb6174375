/**
 * A PostgreSQL server of the test's own (initdb into a temporary directory, on a free port), for
 * tests that restart or stop the database under load without disturbing the shared one on 5432.
 * Debian's binaries from the postgresql package; as root, the server runs as user postgres (it
 * refuses to run as root).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  if (!version) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql');
  return join(root, version, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      s.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface PostgresCluster {
  url: string;
  restart(): void;
  stop(): void;
  remove(): void;
}

export async function startPostgresCluster(): Promise<PostgresCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'berth-pg-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'data');
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { uid, gid } = {
      uid: Number(execFileSync('id', ['-u', 'postgres'])),
      gid: Number(execFileSync('id', ['-g', 'postgres'])),
    };
    chownSync(dir, uid, gid);
  }
  const run = (tool: string, args: string[]) =>
    execFileSync(
      asRoot ? 'runuser' : join(bin, tool),
      asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args,
      {
        stdio: 'pipe',
      },
    );
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const ctl = (...args: string[]) => run('pg_ctl', ['-D', data, '-o', options, '-w', '-t', '60', ...args]);
  ctl('-l', join(dir, 'log'), 'start');
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    restart: () => ctl('-m', 'fast', '-l', join(dir, 'log'), 'restart'),
    stop: () => {
      if (existsSync(join(data, 'postmaster.pid'))) ctl('-m', 'immediate', 'stop');
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
