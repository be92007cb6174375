/**
 * A store's schema as lists that can be compared: every table's columns, its indexes and (on
 * PostgreSQL) constraints, sorted by name. What migrating an old database must end at is what a
 * new one is made with.
 */
import { sql } from 'kysely';
import type { Db, Dialect } from '../../src/store/store.js';

export interface SchemaShape {
  columns: string[];
  indexes: string[];
  constraints: string[];
}

export async function schemaShape(db: Db, dialect: Dialect): Promise<SchemaShape> {
  return dialect === 'sqlite' ? sqliteShape(db) : postgresShape(db);
}

async function rows<T>(db: Db, query: ReturnType<typeof sql<T>>): Promise<T[]> {
  return (await query.execute(db)).rows;
}

async function sqliteShape(db: Db): Promise<SchemaShape> {
  const tables = await rows(
    db,
    sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`,
  );
  const columns: string[] = [];
  const indexes: string[] = [];
  for (const { name } of tables) {
    const cols = await rows(
      db,
      sql<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }>`
        SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(${name})`,
    );
    for (const c of cols)
      columns.push(`${name}.${c.name} ${c.type} notnull=${c.notnull} default=${c.dflt_value} pk=${c.pk}`);
    const idx = await rows(
      db,
      sql<{ name: string; unique: number; partial: number }>`
        SELECT name, "unique", partial FROM pragma_index_list(${name})`,
    );
    for (const i of idx) {
      const on = await rows(db, sql<{ name: string | null }>`SELECT name FROM pragma_index_info(${i.name})`);
      const where = await rows(
        db,
        sql<{ sql: string | null }>`SELECT sql FROM sqlite_master WHERE name = ${i.name}`,
      );
      indexes.push(
        `${name} ${i.name} unique=${i.unique} (${on.map((c) => c.name).join(', ')}) ${i.partial ? (where[0]?.sql?.replace(/^.*\bWHERE\b/is, 'WHERE') ?? '') : ''}`,
      );
    }
  }
  return { columns: columns.sort(), indexes: indexes.sort(), constraints: [] };
}

async function postgresShape(db: Db): Promise<SchemaShape> {
  const columns = await rows(
    db,
    sql<{ c: string }>`
      SELECT table_name || '.' || column_name || ' ' || data_type || ' nullable=' || is_nullable
        || ' default=' || coalesce(column_default, '') AS c
      FROM information_schema.columns WHERE table_schema = 'public'`,
  );
  const indexes = await rows(
    db,
    sql<{ c: string }>`SELECT indexdef AS c FROM pg_indexes WHERE schemaname = 'public'`,
  );
  const constraints = await rows(
    db,
    sql<{ c: string }>`
      SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS c
      FROM pg_constraint WHERE connamespace = 'public'::regnamespace`,
  );
  const sorted = (r: { c: string }[]) => r.map((x) => x.c).sort();
  return { columns: sorted(columns), indexes: sorted(indexes), constraints: sorted(constraints) };
}
