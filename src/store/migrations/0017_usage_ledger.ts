import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/**
 * Usage accounting (domain/usage.ts): the ledger, a row per ended allocation (a job's attempt),
 * append-only, with names copied in rather than keys, so that it outlives renamed and deleted
 * projects and jobs; `(job_id, attempt)` is unique, so that writing an allocation twice fails
 * instead of counting it twice. Rollup tables keep its sums per hour, project, user and queue
 * (and resource), and the same per UTC day (`hour`: the day's start), so that a report never
 * scans the ledger and reads a long period's whole days at a 24th of the rows. `jobs.queued_at`:
 * when the job's current attempt entered its queue, if not at its creation (null), so that a
 * restart keeps it.
 */
export const usageLedger: BerthMigration = {
  async up(db, dialect) {
    await db.schema.alterTable('jobs').addColumn('queued_at', bigint).execute();
    await db.schema
      .createTable('usage_ledger')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('job_id', 'integer', (c) => c.notNull())
      .addColumn('attempt', 'integer', (c) => c.notNull())
      .addColumn('project', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('user_name', 'text', (c) => c.notNull())
      .addColumn('queue', 'text', (c) => c.notNull())
      .addColumn('target', 'text', (c) => c.notNull())
      .addColumn('worker_id', 'integer')
      .addColumn('workers', 'integer', (c) => c.notNull())
      .addColumn('requests', 'text', (c) => c.notNull())
      .addColumn('queued_at', bigint, (c) => c.notNull())
      .addColumn('admitted_at', bigint)
      .addColumn('started_at', bigint)
      .addColumn('ended_at', bigint, (c) => c.notNull())
      .addColumn('outcome', 'text', (c) => c.notNull())
      .addColumn('final', 'integer', (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('usage_ledger_allocation')
      .on('usage_ledger')
      .columns(['job_id', 'attempt'])
      .unique()
      .execute();
    await db.schema.createIndex('usage_ledger_ended').on('usage_ledger').column('ended_at').execute();

    for (const grain of ['hourly', 'daily'] as const) {
      await db.schema
        .createTable(`usage_${grain}`)
        .addColumn('hour', bigint, (c) => c.notNull())
        .addColumn('project', 'text', (c) => c.notNull())
        .addColumn('user_name', 'text', (c) => c.notNull())
        .addColumn('queue', 'text', (c) => c.notNull())
        .addColumn('allocations', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('succeeded', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('cancelled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('requeued', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('retried', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('wait_ms_sum', bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('wait_count', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('wait_ms_max', bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('held_ms', bigint, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint(`usage_${grain}_pkey`, ['hour', 'project', 'user_name', 'queue'])
        .execute();
      await db.schema
        .createTable(`usage_${grain}_resources`)
        .addColumn('hour', bigint, (c) => c.notNull())
        .addColumn('project', 'text', (c) => c.notNull())
        .addColumn('user_name', 'text', (c) => c.notNull())
        .addColumn('queue', 'text', (c) => c.notNull())
        .addColumn('resource', 'text', (c) => c.notNull())
        .addColumn('amount_seconds', sql`double precision`, (c) => c.notNull().defaultTo(0))
        .addPrimaryKeyConstraint(`usage_${grain}_resources_pkey`, [
          'hour',
          'project',
          'user_name',
          'queue',
          'resource',
        ])
        .execute();
      // A member's report reads its projects' rows.
      for (const table of [`usage_${grain}`, `usage_${grain}_resources`])
        await db.schema.createIndex(`${table}_project`).on(table).columns(['project', 'hour']).execute();
    }
  },
};
