import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/** Jobs and the workers made for them. */
export const jobs: BerthMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('jobs')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('project', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('cluster_queue', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text')
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('borrowed', 'text')
      .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('cleaned_up', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('admitted_at', bigint)
      .addColumn('started_at', bigint)
      .addColumn('finished_at', bigint)
      .execute();
    // Every index costs page writes on every insert, so each one here serves a real query, and
    // the ones that only concern a few rows are partial.
    await db.schema.createIndex('jobs_project').on('jobs').columns(['project', 'id']).execute();
    await db.schema
      .createIndex('jobs_project_state')
      .on('jobs')
      .columns(['project', 'state', 'id'])
      .execute();
    // The controller rebuilds its model from unfinished or not-yet-cleaned jobs on start.
    await db.schema
      .createIndex('jobs_unfinished')
      .on('jobs')
      .column('id')
      .where(sql.ref('cleaned_up'), '=', 0)
      .execute();
    await db.schema
      .createIndex('jobs_idempotency')
      .on('jobs')
      .columns(['project', 'idempotency_key'])
      .unique()
      .where(sql.ref('idempotency_key'), 'is not', null)
      .execute();

    // A worker is recorded (creating) before its factory is asked, and kept until its
    // destruction is confirmed (destroyed), so a crash can never forget one.
    await db.schema
      .createTable('workers')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('job_id', 'integer', (c) => c.notNull())
      .addColumn('factory', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('handle', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .addColumn('heartbeat_at', bigint)
      .execute();
    await db.schema
      .createIndex('workers_live')
      .on('workers')
      .column('id')
      .where(sql.ref('state'), 'in', sql`('creating', 'ready', 'destroying')`)
      .execute();
    await db.schema.createIndex('workers_job').on('workers').columns(['job_id']).execute();
  },
};
