import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/** Users, tokens, cluster queues, projects with members and privileges, and the event log. */
export const foundation: BerthMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('users')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('admin', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('api_tokens')
      .addColumn('hash', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'integer', (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('job_id', 'integer')
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('expires_at', bigint)
      .execute();
    await db.schema.createIndex('api_tokens_user').on('api_tokens').column('user_id').execute();
    await db.schema.createIndex('api_tokens_job').on('api_tokens').column('job_id').execute();

    await db.schema
      .createTable('cluster_queues')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();

    // No foreign key to cluster_queues: the service refuses dangling references, and a job
    // submitted while its project's queue is being replaced must wait with a reason, not vanish.
    await db.schema
      .createTable('projects')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('tags', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('cluster_queue', 'text', (c) => c.notNull())
      .addColumn('active', 'integer', (c) => c.notNull().defaultTo(1))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('projects_queue').on('projects').column('cluster_queue').execute();

    await db.schema
      .createTable('project_members')
      .addColumn('project', 'text', (c) => c.notNull().references('projects.name').onDelete('cascade'))
      .addColumn('user_id', 'integer', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('role', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('project_members_pk', ['project', 'user_id'])
      .execute();
    await db.schema.createIndex('project_members_user').on('project_members').column('user_id').execute();

    await db.schema
      .createTable('project_privileges')
      .addColumn('project', 'text', (c) => c.notNull().references('projects.name').onDelete('cascade'))
      .addColumn('privilege', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('project_privileges_pk', ['project', 'privilege'])
      .execute();

    await db.schema
      .createTable('events')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('at', bigint, (c) => c.notNull())
      .addColumn('subject_kind', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('project', 'text')
      .addColumn('job_id', 'integer')
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('message', 'text', (c) => c.notNull())
      .addColumn('data', 'text')
      .execute();
    await db.schema
      .createIndex('events_subject')
      .on('events')
      .columns(['subject_kind', 'subject', 'id'])
      // Job events, the bulk of the log, are found through events_job; keeping them out of this
      // index saves a page write per job event.
      .where(sql.ref('job_id'), 'is', null)
      .execute();
    await db.schema
      .createIndex('events_job')
      .on('events')
      .columns(['job_id', 'id'])
      .where(sql.ref('job_id'), 'is not', null)
      .execute();
  },
};
