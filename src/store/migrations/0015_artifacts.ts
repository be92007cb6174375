import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * Artifacts (domain/artifact.ts): a row per file a job's run kept, keyed by job, run (attempt)
 * and name. The bytes live on disk (store/artifact-files.ts), never in the database, so a row is
 * small whatever the file. No foreign key to jobs: the retention sweep removes a job's rows and
 * files together, and a job's row is never deleted before them.
 */
export const artifacts: BerthMigration = {
  async up(db) {
    await db.schema
      .createTable('job_artifacts')
      .addColumn('job_id', 'integer', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('size', bigint, (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('job_artifacts_pkey', ['job_id', 'attempt', 'name'])
      .execute();
  },
};
