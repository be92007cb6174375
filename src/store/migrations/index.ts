/**
 * Numbered migrations, applied in order on start. Never edit a released migration: add the next
 * number. Kysely's Migrator records what ran in its own table and takes a lock while it runs.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Dialect } from '../store.js';
import type { BerthMigration } from './helpers.js';
import { foundation } from './0001_foundation.js';
import { jobs } from './0002_jobs.js';
import { priorityClasses } from './0003_priority_classes.js';
import { resources } from './0004_resources.js';
import { jobLists } from './0005_job_lists.js';
import { replicas } from './0006_replicas.js';
import { projectMoves } from './0007_project_moves.js';
import { tokenAccess } from './0008_token_access.js';
import { workerRegistration } from './0009_worker_registration.js';
import { gangRegistration } from './0010_gang_registration.js';
import { tokenLife } from './0011_token_life.js';
import { auditLog } from './0012_audit_log.js';
import { projectLimits } from './0013_project_limits.js';
import { retries } from './0014_retries.js';
import { artifacts } from './0015_artifacts.js';
import { jobArrays } from './0016_job_arrays.js';
import { usageLedger } from './0017_usage_ledger.js';
import { logBytes } from './0018_log_bytes.js';
import { retention } from './0019_retention.js';
import { schemaRepair } from './0020_schema_repair.js';
import { usageRepair } from './0021_usage_repair.js';
import { registryCredentials } from './0022_registry_credentials.js';

export const MIGRATIONS: [string, BerthMigration][] = [
  ['0001_foundation', foundation],
  ['0002_jobs', jobs],
  ['0003_priority_classes', priorityClasses],
  ['0004_resources', resources],
  ['0005_job_lists', jobLists],
  ['0006_replicas', replicas],
  ['0007_project_moves', projectMoves],
  ['0008_token_access', tokenAccess],
  ['0009_worker_registration', workerRegistration],
  ['0010_gang_registration', gangRegistration],
  ['0011_token_life', tokenLife],
  ['0012_audit_log', auditLog],
  ['0013_project_limits', projectLimits],
  ['0014_retries', retries],
  ['0015_artifacts', artifacts],
  ['0016_job_arrays', jobArrays],
  ['0017_usage_ledger', usageLedger],
  ['0018_log_bytes', logBytes],
  ['0019_retention', retention],
  ['0020_schema_repair', schemaRepair],
  ['0021_usage_repair', usageRepair],
  ['0022_registry_credentials', registryCredentials],
];

/** The migrations a berth knows: MIGRATIONS, or fewer where a test plays an older berth. */
export type KnownMigrations = readonly (readonly [string, BerthMigration])[];

class BerthMigrationProvider implements MigrationProvider {
  constructor(
    private readonly dialect: Dialect,
    private readonly known: KnownMigrations,
  ) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {};
    for (const [name, m] of this.known) out[name] = { up: (db) => m.up(db, this.dialect) };
    return out;
  }
}

/** The database was written by a newer berth: this one must not touch it. */
export class NewerStoreError extends Error {}

/** Kysely's record of the migrations that ran, or none when the database is new. */
export async function appliedMigrations(db: Kysely<unknown>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true });
  if (!tables.some((t) => t.name === 'kysely_migration')) return [];
  const rows = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
  return rows.rows.map((r) => r.name);
}

/**
 * Refuses, in one line, a database that has had a migration this binary does not know: a newer
 * berth wrote it, and an older one would misread or break what it changed.
 */
export async function refuseNewer(
  db: Kysely<unknown>,
  known: KnownMigrations = MIGRATIONS,
): Promise<string[]> {
  const applied = await appliedMigrations(db);
  const names = new Set(known.map(([name]) => name));
  const unknown = applied.filter((name) => !names.has(name));
  if (unknown.length > 0) throw newerStore(unknown.at(-1)!, known);
  return applied;
}

/** The one line that refuses a database a newer berth migrated to `newest`. */
export function newerStore(newest: string, known: KnownMigrations): NewerStoreError {
  return new NewerStoreError(
    `the database was written by a newer berth (its schema has migration ${newest}; this berth knows up to ${known.at(-1)![0]}): run that newer berth, or restore a backup this one took`,
  );
}

export async function migrate(
  db: Kysely<unknown>,
  dialect: Dialect,
  known: KnownMigrations = MIGRATIONS,
): Promise<string[]> {
  await refuseNewer(db, known);
  const migrator = new Migrator({ db, provider: new BerthMigrationProvider(dialect, known) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(
      `database migration ${failed} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
    );
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
