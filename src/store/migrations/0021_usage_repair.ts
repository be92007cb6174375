import { sql } from 'kysely';
import { OBJECT_MEMBERS } from '../../domain/names.js';
import type { BerthMigration } from './helpers.js';

/**
 * Removes the usage rollup rows that berth before issue #40 could write for a resource named as a
 * member of every JavaScript object (`hasOwnProperty`, `constructor`, …): the daily sum found the
 * inherited member and `+` made it text, which SQLite kept in `amount_seconds`, and every usage
 * report failed from then on. Such names are refused now (domain/names.ts), so these rows account
 * for nothing a job can ask for again; the hourly ones go with the daily ones, and any other row
 * whose amount is not a number (SQLite only: PostgreSQL's column refuses text). The ledger keeps
 * each allocation as it was. `berth store check` names such rows on a database not yet migrated.
 */
export const usageRepair: BerthMigration = {
  async up(db, dialect) {
    const members = sql.join(OBJECT_MEMBERS.map((m) => sql`${m}`));
    for (const table of ['usage_hourly_resources', 'usage_daily_resources']) {
      const notNumber =
        dialect === 'sqlite' ? sql` OR typeof(amount_seconds) NOT IN ('real', 'integer')` : sql``;
      await sql`DELETE FROM ${sql.table(table)} WHERE resource IN (${members})${notNumber}`.execute(db);
    }
  },
};
