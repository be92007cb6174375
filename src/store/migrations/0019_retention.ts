import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * Retention (service/retention.ts): ended jobs older than `retention.jobs` are removed, and what
 * stays of them is a range of ids in `removed_jobs` (never a row per job), so that asking for one
 * answers why it is gone. `jobs_ended` finds the oldest ended jobs without a scan: a partial index,
 * on jobs that have a `finished_at` only, so that a queued or running job's writes never touch it.
 */
export const retention: BerthMigration = {
  async up(db) {
    await db.schema
      .createTable('removed_jobs')
      .addColumn('first_id', 'integer', (c) => c.primaryKey())
      .addColumn('last_id', 'integer', (c) => c.notNull())
      .addColumn('ended_from', bigint, (c) => c.notNull())
      .addColumn('ended_to', bigint, (c) => c.notNull())
      .addColumn('retention_seconds', bigint, (c) => c.notNull())
      .addColumn('removed_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('jobs_ended')
      .on('jobs')
      .columns(['finished_at', 'id'])
      .where(sql.ref('finished_at'), 'is not', null)
      .execute();
  },
};
