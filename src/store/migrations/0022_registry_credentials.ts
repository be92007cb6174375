import { bigint, type BerthMigration } from './helpers.js';

/**
 * A project's registry credentials (docs/IMAGES.md, "Private registries"): per project and
 * registry, the user name and the password sealed with the installation's secret key
 * (store/secret-box.ts) — a copy of the database, or a backup, holds no password in the clear.
 * They go with their project.
 */
export const registryCredentials: BerthMigration = {
  async up(db) {
    await db.schema
      .createTable('registry_credentials')
      .addColumn('project', 'text', (c) => c.notNull().references('projects.name').onDelete('cascade'))
      .addColumn('registry', 'text', (c) => c.notNull())
      .addColumn('username', 'text', (c) => c.notNull())
      .addColumn('sealed', 'text', (c) => c.notNull())
      .addColumn('updated_by', 'text', (c) => c.notNull())
      .addColumn('updated_at', bigint, (c) => c.notNull())
      .addPrimaryKeyConstraint('registry_credentials_pk', ['project', 'registry'])
      .execute();
  },
};
