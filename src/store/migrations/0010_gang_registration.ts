import type { BerthMigration } from './helpers.js';

/**
 * How many of a worker's agents have yet to register with its credential: a gang job's worker
 * runs one agent per member (`srun` on each node of a Slurm allocation), all started with the
 * same credential, which is spent once the last has registered. 1 for every other worker.
 */
export const gangRegistration: BerthMigration = {
  async up(db) {
    await db.schema
      .alterTable('workers')
      .addColumn('unregistered', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
  },
};
