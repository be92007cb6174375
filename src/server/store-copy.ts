/**
 * `berth store copy --to postgres://…`: moves an installation from its SQLite file to an empty
 * PostgreSQL database — every record, the job logs (files on SQLite, a table on PostgreSQL) and
 * the installation id (which names what its postgres wells made) — for `berth server --database`
 * to go on from there. It refuses while a server uses the data directory, and a target that
 * already holds anything.
 */
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfigFile, resolveConfig } from '../config/load.js';
import { ConfigError } from '../domain/errors.js';
import { copyStore, nonEmptyTables, type CopyReport } from '../store/copy.js';
import { listLogFiles } from '../store/log-store.js';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore } from '../store/sqlite.js';
import { readServerInfo } from './discovery.js';
import { redactUrl } from './open-store.js';

export interface StoreCopyOptions {
  dataDir?: string;
  configFile?: string;
  to: string;
  print: (line: string) => void;
}

/** A copy that cannot start; the message says why, in one line. */
export class StoreCopyError extends Error {}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The job logs under DATA/logs, each read in chunks of at most 1 MiB, bytes as they are. */
async function* logsOf(dir: string): AsyncGenerator<{ jobId: number; chunks: AsyncIterable<Buffer> }> {
  for (const { jobId, path } of await listLogFiles(dir))
    yield { jobId, chunks: createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer> };
}

export async function runStoreCopy(o: StoreCopyOptions): Promise<CopyReport> {
  const raw = o.configFile ? loadConfigFile(o.configFile) : {};
  const dataDir = resolve(resolveConfig(raw, { dataDir: o.dataDir }, o.configFile).dataDir);
  const file = join(dataDir, 'berth.db');
  if (!existsSync(file))
    throw new StoreCopyError(`no SQLite store in ${dataDir} (no berth.db); give --data-dir`);
  const running = readServerInfo(dataDir);
  if (running && alive(running.pid))
    throw new StoreCopyError(`a server (pid ${running.pid}, ${running.url}) uses ${dataDir}: stop it first`);
  if (!/^postgres(ql)?:\/\//.test(o.to)) throw new StoreCopyError('--to must be a postgres:// URL');

  const source = await openSqliteStore(file);
  try {
    o.print(`copying ${file} to ${redactUrl(o.to)}`);
    let target;
    try {
      target = await openPostgresStore(o.to, { max: 2 });
    } catch (e) {
      throw new ConfigError(
        '--to',
        `cannot use ${redactUrl(o.to)}: ${e instanceof Error ? e.message : String(e)}`,
      );
    }
    try {
      const full = await nonEmptyTables(target.db);
      if (full.length > 0)
        throw new StoreCopyError(
          `the target database is not empty (it has ${full.join(', ')}): copy into a new, empty database`,
        );
      const idFile = join(dataDir, 'installation.id');
      const settings: Record<string, string> = {};
      if (existsSync(idFile)) settings.installation = readFileSync(idFile, 'utf8').trim();
      let last = '';
      const report = await copyStore(
        source,
        target,
        { settings, logs: logsOf(join(dataDir, 'logs')) },
        {
          table: (name, rows) => {
            // One line per table, updated in place on a terminal.
            if (process.stdout.isTTY) process.stdout.write(`\r  ${name}: ${rows.toLocaleString('en')}`);
            last = name;
          },
        },
      );
      if (process.stdout.isTTY && last) process.stdout.write('\r\x1b[K');
      for (const [table, n] of Object.entries(report.rows)) o.print(`  ${table}: ${n.toLocaleString('en')}`);
      o.print(
        `  job logs: ${report.logs.jobs.toLocaleString('en')} jobs, ${report.logs.bytes.toLocaleString('en')} bytes`,
      );
      o.print(`done: start the server with --database ${redactUrl(o.to)} (or database: in berth.yaml)`);
      return report;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
