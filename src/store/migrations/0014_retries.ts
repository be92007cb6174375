import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * Retries (domain/retry.ts): per job, the retries used from each budget and, while it waits to be
 * retried, when it goes back to its queue; and a row per ended attempt that was not the last
 * (evicted and requeued, or failed and retried), with where its output ends in the job's log
 * (`log_end`: a byte offset in the log file on SQLite, the last `job_logs` row id on PostgreSQL),
 * so that `berth logs --attempt K` shows one attempt. A job that ran once has no row here.
 */
export const retries: BerthMigration = {
  async up(db) {
    await db.schema
      .alterTable('jobs')
      .addColumn('retried', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('jobs')
      .addColumn('infra_retried', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('jobs').addColumn('retry_at', bigint).execute();
    await db.schema
      .createTable('job_attempts')
      .addColumn('job_id', 'integer', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('charged', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('started_at', bigint)
      .addColumn('ended_at', bigint, (c) => c.notNull())
      .addColumn('log_end', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('job_attempts_pkey', ['job_id', 'attempt'])
      .execute();
  },
};
