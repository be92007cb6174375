import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint, serialKey, serialType } from './helpers.js';

/**
 * The audit log: who changed what through the API, when and from where (service/tenancy/audit.ts). Each
 * row is written in the transaction of the change it describes. Every index costs each submission
 * (a row each) about 1 µs, so there are two, for the filters that pick few rows (actor, project);
 * a page newest first, also one since a time, is read backwards along the primary key.
 */
export const auditLog: BerthMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('audit_log')
      .addColumn('id', serialType(dialect), serialKey(dialect))
      .addColumn('at', bigint, (c) => c.notNull())
      .addColumn('actor', 'text', (c) => c.notNull())
      .addColumn('actor_kind', 'text', (c) => c.notNull())
      .addColumn('address', 'text')
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('project', 'text')
      .addColumn('detail', 'text')
      .execute();
    await db.schema.createIndex('audit_log_actor').on('audit_log').columns(['actor', 'id']).execute();
    await db.schema
      .createIndex('audit_log_project')
      .on('audit_log')
      .columns(['project', 'id'])
      .where(sql.ref('project'), 'is not', null)
      .execute();
  },
};
