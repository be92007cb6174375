import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/**
 * Retention (service/upkeep/retention.ts): ended jobs older than `retention.jobs` are removed, and what
 * stays of them is a range of ids in `removed_jobs` (never a row per job), so that asking for one
 * answers why it is gone. No index on when jobs ended: the sweep walks ids from the oldest job
 * left, which reads the jobs it removes and the few created before the cut-off that stay.
 */
export const retention: BerthMigration = {
  async up(db) {
    await db.schema
      .createTable('removed_jobs')
      .addColumn('first_id', bigint, (c) => c.primaryKey())
      .addColumn('last_id', bigint, (c) => c.notNull())
      .addColumn('ended_from', bigint, (c) => c.notNull())
      .addColumn('ended_to', bigint, (c) => c.notNull())
      .addColumn('retention_seconds', bigint, (c) => c.notNull())
      .addColumn('removed_at', bigint, (c) => c.notNull())
      .execute();
  },
};
