import type { BerthMigration } from './helpers.js';

/**
 * The hash of a worker's one-time registration credential (`berth agent` on another machine:
 * service/cluster/agent-registration.ts); null once spent, and on every worker whose agent receives its
 * job's token directly (the local factory's).
 */
export const workerRegistration: BerthMigration = {
  async up(db) {
    await db.schema.alterTable('workers').addColumn('registration', 'text').execute();
  },
};
