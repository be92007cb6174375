import { sql } from 'kysely';
import type { BerthMigration } from './helpers.js';

/**
 * Job output on PostgreSQL is kept as bytes (`bytea`), not text: a job's output is whatever it
 * wrote, and text cannot hold a NUL character (PostgreSQL refuses the row), so a job that printed
 * one lost the rest of its log. What was kept as text is kept as its UTF-8 bytes. SQLite keeps
 * logs in files (store/log-store.ts); its `job_logs` is unused and stays as it is.
 */
export const logBytes: BerthMigration = {
  async up(db, dialect) {
    if (dialect !== 'postgres') return;
    await sql`ALTER TABLE job_logs ALTER COLUMN data TYPE bytea USING convert_to(data, 'UTF8')`.execute(db);
  },
};
