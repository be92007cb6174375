import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/**
 * What several replicas on one PostgreSQL share beyond the records: job output in a table (on
 * SQLite it stays in files), the leader's lease with its term (the fencing token), and the live
 * figures the leader publishes for the others, and the installation's settings. SQLite gets the
 * same tables, unused (its one server always leads; its logs and installation id stay in the data
 * directory).
 */
export const replicas: BerthMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('job_logs')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('job_id', bigint, (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('job_logs_job').on('job_logs').columns(['job_id', 'id']).execute();

    // One row. `term` grows by one at every election; `expires_at` is on the database's clock.
    await db.schema
      .createTable('leader_lease')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('holder', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull())
      .addColumn('term', bigint, (c) => c.notNull())
      .addColumn('expires_at', bigint, (c) => c.notNull())
      .execute();
    await sql`INSERT INTO leader_lease (name, holder, url, term, expires_at) VALUES ('scheduler', '', '', 0, 0)`.execute(
      db,
    );

    // Settings of the installation that must be the same on every replica (its id, which names
    // what its wells make), kept with the records rather than in one replica's data directory.
    await db.schema
      .createTable('settings')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'text', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('live_figures')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('term', bigint, (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('at', bigint, (c) => c.notNull())
      .execute();
  },
};
