import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';

/**
 * Job arrays (domain/job-array.ts): each task is a job row that names its array (the id of the
 * array's first task) and its index. Two partial indexes, so that tasks cost nothing where they
 * are not asked for: one finds an array's tasks and counts them by state; one serves a project's
 * job list with each array as one line (its first task), however many tasks it has.
 */
export const jobArrays: BerthMigration = {
  async up(db) {
    await db.schema.alterTable('jobs').addColumn('array_id', 'integer').execute();
    await db.schema.alterTable('jobs').addColumn('array_index', 'integer').execute();
    await db.schema
      .createIndex('jobs_array')
      .on('jobs')
      .columns(['array_id', 'state', 'array_index'])
      .where(sql.ref('array_id'), 'is not', null)
      .execute();
    await sql`CREATE INDEX jobs_project_listed ON jobs (project, id)
      WHERE array_id IS NULL OR array_id = id`.execute(db);
  },
};
