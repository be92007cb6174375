/**
 * `berth store backup`, `restore` and `check` for the SQLite store (docs/DEPLOYMENT.md). A backup
 * is a directory: `berth.db`, a consistent copy taken while the server runs (store/sqlite-tools.ts);
 * `logs/`, the logs of every job in that copy, read after it, so each holds at least what the
 * copy's job had written; `artifacts/` when they live in the data directory; the installation id
 * and the admin token; and `backup.json`, what it holds. It is written beside its place and renamed
 * into it when whole, so that a backup that failed leaves nothing that looks like one. Restore copies
 * it into an empty data directory; check reports the file's integrity and what lost its job.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { loadConfigFile, resolveConfig } from '../config/load.js';
import { listLogFiles, logPath } from '../store/log-store.js';
import {
  brokenUsageRows,
  integrityOf,
  missingJobs,
  openReadOnly,
  orphanRows,
  snapshot,
  type BrokenUsageRow,
} from '../store/sqlite-tools.js';
import { VERSION } from '../version.js';
import { redactUrl } from './open-store.js';

/** A backup, restore or check that cannot be done; the message says why, in one line. */
export class StoreToolError extends Error {}

/** Where an installation is: from --data-dir, --database (or $BERTH_DATABASE) and the config file. */
export interface InstallationOptions {
  dataDir?: string;
  configFile?: string;
  database?: string;
}

const MANIFEST = 'backup.json';
const FORMAT = 'berth-backup-1';
/** Files of the data directory a backup keeps beside the database. */
const KEPT_FILES = ['installation.id', 'admin.token'];

/** The data directory and its SQLite file; on PostgreSQL, an error saying what to use instead. */
function sqliteInstallation(o: InstallationOptions, what: string, instead: (url: string) => string) {
  const raw = o.configFile ? loadConfigFile(o.configFile) : {};
  const database = o.database ?? process.env.BERTH_DATABASE;
  const config = resolveConfig(raw, { dataDir: o.dataDir, database }, o.configFile);
  if (config.database !== 'sqlite')
    throw new StoreToolError(
      `berth store ${what} works on the SQLite store; this installation is on PostgreSQL: ${instead(redactUrl(config.database))}`,
    );
  const dataDir = resolve(config.dataDir);
  const file = join(dataDir, 'berth.db');
  if (!existsSync(file))
    throw new StoreToolError(`no SQLite store in ${dataDir} (no berth.db); give --data-dir`);
  const artifacts = config.artifacts.dir ?? join(dataDir, 'artifacts');
  return { dataDir, file, artifacts, artifactsInside: dirname(artifacts) === dataDir };
}

export interface BackupReport {
  backup: string;
  takenAt: string;
  jobs: number;
  lastJobId: number;
  logs: number;
  logBytes: number;
  artifacts: boolean;
}

export async function runStoreBackup(
  o: InstallationOptions & { target: string; print: (line: string) => void },
): Promise<BackupReport> {
  const target = resolve(o.target);
  const inst = sqliteInstallation(
    o,
    'backup',
    (url) =>
      `back it up with pg_dump --format=custom --file=${o.target} "${url}" (the password from $PGPASSWORD or ~/.pgpass)`,
  );
  if (existsSync(target))
    throw new StoreToolError(`${target} already exists: give a new path for the backup`);
  const partial = `${target}.partial`;
  await rm(partial, { recursive: true, force: true });
  await mkdir(partial, { recursive: true, mode: 0o700 });
  try {
    const takenAt = new Date().toISOString();
    o.print(`backing up ${inst.dataDir} to ${target}`);
    const figures = snapshot(inst.file, join(partial, 'berth.db'));
    o.print(`  database: ${figures.jobs.toLocaleString('en')} jobs`);
    // After the copy: every log of a job in it, with at least what that job had written then.
    let logs = 0;
    let logBytes = 0;
    const logDir = join(inst.dataDir, 'logs');
    const made = new Set<string>();
    for (const { jobId, path } of await listLogFiles(logDir)) {
      if (jobId > figures.lastJobId) break;
      const to = logPath(join(partial, 'logs'), jobId);
      if (!made.has(dirname(to))) await mkdir(dirname(to), { recursive: true, mode: 0o700 });
      made.add(dirname(to));
      try {
        await copyFile(path, to);
      } catch (e) {
        // Removed meanwhile by the retention sweep: its job goes with it.
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw e;
      }
      logs++;
      logBytes += (await stat(to)).size;
    }
    o.print(`  job logs: ${logs.toLocaleString('en')} files, ${logBytes.toLocaleString('en')} bytes`);
    const artifacts = inst.artifactsInside && existsSync(inst.artifacts);
    if (artifacts) await cp(inst.artifacts, join(partial, 'artifacts'), { recursive: true });
    else if (existsSync(inst.artifacts))
      o.print(`  artifacts: not included (${inst.artifacts} is outside the data directory: back it up too)`);
    for (const name of KEPT_FILES)
      if (existsSync(join(inst.dataDir, name))) await copyFile(join(inst.dataDir, name), join(partial, name));
    const report: BackupReport = { backup: target, takenAt, ...figures, logs, logBytes, artifacts };
    writeFileSync(
      join(partial, MANIFEST),
      JSON.stringify({ format: FORMAT, version: VERSION, ...report }, null, 2),
    );
    await rename(partial, target);
    o.print(`done: berth store restore ${target} --data-dir NEW_DIR`);
    return report;
  } catch (e) {
    await rm(partial, { recursive: true, force: true });
    throw e;
  }
}

export interface RestoreReport {
  dataDir: string;
  takenAt: string;
  jobs: number;
  logs: number;
}

export async function runStoreRestore(o: {
  source: string;
  dataDir: string;
  print: (line: string) => void;
}): Promise<RestoreReport> {
  const source = resolve(o.source);
  const dataDir = resolve(o.dataDir);
  let manifest: (BackupReport & { format?: string }) | undefined;
  try {
    manifest = JSON.parse(readFileSync(join(source, MANIFEST), 'utf8')) as BackupReport & { format?: string };
  } catch {
    manifest = undefined;
  }
  if (manifest?.format !== FORMAT)
    throw new StoreToolError(`${source} is not a berth backup (no ${MANIFEST} of berth store backup)`);
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
    throw new StoreToolError(`${dataDir} is not empty: restore into a new or empty data directory`);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, 0o700);
  for (const name of readdirSync(source))
    if (name !== MANIFEST) await cp(join(source, name), join(dataDir, name), { recursive: true });
  const db = openReadOnly(join(dataDir, 'berth.db'));
  try {
    const integrity = integrityOf(db);
    if (integrity.join() !== 'ok')
      throw new StoreToolError(`the restored database is damaged: ${integrity.slice(0, 3).join('; ')}`);
  } finally {
    db.close();
  }
  o.print(
    `restored the backup of ${manifest.takenAt} into ${dataDir}: ${manifest.jobs.toLocaleString('en')} jobs, ${manifest.logs.toLocaleString('en')} logs`,
  );
  o.print(`start it: berth server --data-dir ${dataDir}`);
  return { dataDir, takenAt: manifest.takenAt, jobs: manifest.jobs, logs: manifest.logs };
}

export interface CheckReport {
  dataDir: string;
  /** `['ok']`, or what PRAGMA integrity_check found. */
  integrity: string[];
  /** Per table, rows whose job is gone. */
  orphanRows: Record<string, number>;
  /** Log files of no job (a few ids named, up to 10). */
  orphanLogs: { count: number; jobIds: number[] };
  /** Usage rollup rows no report can sum (a few named): what 0021_usage_repair removes. */
  brokenUsage: { count: number; rows: BrokenUsageRow[] };
  ok: boolean;
}

export async function runStoreCheck(
  o: InstallationOptions & { print: (line: string) => void },
): Promise<CheckReport> {
  const inst = sqliteInstallation(
    o,
    'check',
    () => 'PostgreSQL checks its own pages; look for orphans with SQL (docs/DEPLOYMENT.md)',
  );
  const db = openReadOnly(inst.file);
  try {
    const integrity = integrityOf(db);
    const rows = orphanRows(db);
    const files = await listLogFiles(join(inst.dataDir, 'logs'));
    const lost = missingJobs(
      db,
      files.map((f) => f.jobId),
    );
    const broken = brokenUsageRows(db);
    const ok =
      integrity.join() === 'ok' && Object.keys(rows).length === 0 && lost.length === 0 && broken.count === 0;
    o.print(`integrity: ${integrity.join('; ')}`);
    const tables = Object.entries(rows).map(([t, n]) => `${t} ${n.toLocaleString('en')}`);
    o.print(`rows without their job: ${tables.length === 0 ? 'none' : tables.join(', ')}`);
    o.print(
      `log files without their job: ${lost.length === 0 ? 'none' : `${lost.length.toLocaleString('en')} (jobs ${lost.slice(0, 10).join(', ')}${lost.length > 10 ? ', …' : ''})`}`,
    );
    const named = broken.rows.map(
      (r) =>
        `${r.table} ${new Date(r.hour).toISOString()} ${r.project}/${r.user}/${r.queue} ${r.resource} = ${JSON.stringify(r.amount)}`,
    );
    o.print(
      `usage rows no report can sum: ${broken.count === 0 ? 'none' : `${broken.count.toLocaleString('en')} (berth server removes them when it starts: migration 0021_usage_repair)`}`,
    );
    for (const line of named) o.print(`  ${line}`);
    return {
      dataDir: inst.dataDir,
      integrity,
      orphanRows: rows,
      orphanLogs: { count: lost.length, jobIds: lost.slice(0, 10) },
      brokenUsage: broken,
      ok,
    };
  } finally {
    db.close();
  }
}
