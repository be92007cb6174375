import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';
import { bigint } from './helpers.js';

/** Named priorities, and each project's fair-share weight. */
export const priorityClasses: BerthMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('priority_classes')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('value', 'integer', (c) => c.notNull())
      .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
      .addColumn('created_at', bigint, (c) => c.notNull())
      .execute();

    await db.schema
      .alterTable('projects')
      .addColumn('weight', dialect === 'postgres' ? sql`double precision` : 'real', (c) =>
        c.notNull().defaultTo(1),
      )
      .execute();
  },
};
