import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/** Managed resource instances, and scoped tokens (the `token` well's). */
export const resources: BerthMigration = {
  async up(db, dialect) {
    // Like workers: recorded (creating) before the well is asked, kept until destroyed.
    // `metadata` holds what the job reads (passwords included); it is served only to the job.
    await db.schema
      .createTable('resource_instances')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('job_id', 'integer', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('metadata', 'text')
      .addColumn('error', 'text')
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex('resource_instances_job')
      .on('resource_instances')
      .columns(['job_id'])
      .execute();
    await db.schema
      .createIndex('resource_instances_live')
      .on('resource_instances')
      .column('id')
      .where(sql.ref('state'), 'in', sql`('creating', 'ready', 'destroying')`)
      .execute();
    // A token either runs a job's agent (scope null) or stands for a project member on behalf
    // of a job (scope = the project): what the `token` well hands out.
    await db.schema.alterTable('api_tokens').addColumn('scope', 'text').execute();
  },
};
