import { sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely';
import type { Dialect } from '../store.js';

/** A migration gets the dialect so the few DDL differences stay inside the migration. */
export interface BerthMigration {
  up(db: Kysely<unknown>, dialect: Dialect): Promise<void>;
}

/** An auto-incrementing integer primary key in either dialect. */
export function serialType(dialect: Dialect) {
  return dialect === 'postgres' ? sql`bigserial` : sql`integer`;
}

export function serialKey(dialect: Dialect) {
  return (col: ColumnDefinitionBuilder) =>
    dialect === 'postgres' ? col.primaryKey() : col.primaryKey().autoIncrement();
}

/** Timestamps in ms and other counters that outgrow 32 bits. */
export const bigint = sql`bigint`;
