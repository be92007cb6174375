import type { BerthMigration } from './helpers.js';

/**
 * A project's `maxQueued`: the most of its jobs that may wait in its queue at once (Slurm's
 * MaxSubmitJobs); null: its cluster queue's default, if any.
 */
export const projectLimits: BerthMigration = {
  async up(db) {
    await db.schema.alterTable('projects').addColumn('max_queued', 'integer').execute();
  },
};
