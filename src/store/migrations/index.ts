/**
 * Numbered migrations, applied in order on start. Never edit a released migration: add the next
 * number. Kysely's Migrator records what ran in its own table and takes a lock while it runs.
 */
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
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
];

class BerthMigrationProvider implements MigrationProvider {
  constructor(private readonly dialect: Dialect) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const out: Record<string, Migration> = {};
    for (const [name, m] of MIGRATIONS) out[name] = { up: (db) => m.up(db, this.dialect) };
    return out;
  }
}

export async function migrate(db: Kysely<unknown>, dialect: Dialect): Promise<string[]> {
  const migrator = new Migrator({ db, provider: new BerthMigrationProvider(dialect) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(
      `database migration ${failed} failed: ${error instanceof Error ? error.message : JSON.stringify(error)}`,
    );
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
