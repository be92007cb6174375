import { sql, type Kysely } from 'kysely';
import type { BerthMigration } from './helpers.js';

/**
 * Brings SQLite databases made by the first berths (schemas 0001 to 0003) to the shape a new
 * database has: 0001_foundation was edited in place after they were made rather than followed by
 * a migration (54272cc: job events out of `events_subject`, which became partial, and so did
 * `events_job`; e948b9a: `job_id` INTEGER, not TEXT, in `events` and `api_tokens`), so they never
 * got those changes. On every other database (a new one, or one made since) it reads the two
 * definitions and changes nothing. Nothing to do on PostgreSQL: its store (0006) came after both
 * edits.
 */
export const schemaRepair: BerthMigration = {
  async up(db, dialect) {
    if (dialect !== 'sqlite') return;
    const staleIndexes: typeof JOB_EVENT_INDEXES = [];
    for (const index of JOB_EVENT_INDEXES) {
      const { rows } = await sql<{ sql: string | null }>`
        SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ${index.name}`.execute(db);
      if (!sameStatement(rows[0]?.sql, index.create(db).compile().sql)) staleIndexes.push(index);
    }
    const textJobIds: string[] = [];
    for (const table of ['events', 'api_tokens']) {
      const { rows } = await sql<{ type: string }>`
        SELECT type FROM pragma_table_info(${table}) WHERE name = 'job_id'`.execute(db);
      if (rows[0] && rows[0].type.toUpperCase() !== 'INTEGER') textJobIds.push(table);
    }
    if (staleIndexes.length === 0 && textJobIds.length === 0) return;

    // SQLite's procedure for a change ALTER TABLE cannot make
    // (https://www.sqlite.org/lang_altertable.html#otheralter): foreign keys off, outside the
    // transaction (the migrator runs SQLite's migrations outside one), and back on after it.
    const { rows } = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(db);
    const foreignKeys = rows[0]?.foreign_keys === 1;
    if (foreignKeys) await sql`PRAGMA foreign_keys = OFF`.execute(db);
    try {
      await sql`BEGIN IMMEDIATE`.execute(db);
      try {
        // Stale indexes go first and are made last, so that a table rebuilt in between does not
        // build them once more in their old shape.
        for (const index of staleIndexes) await sql`DROP INDEX IF EXISTS ${sql.id(index.name)}`.execute(db);
        for (const table of textJobIds) await integerJobId(db, table);
        for (const index of staleIndexes) await index.create(db).execute();
        await sql`COMMIT`.execute(db);
      } catch (e) {
        await sql`ROLLBACK`.execute(db);
        throw e;
      }
    } finally {
      if (foreignKeys) await sql`PRAGMA foreign_keys = ON`.execute(db);
    }
  },
};

/** The job events' indexes as 0001_foundation makes them now. */
const JOB_EVENT_INDEXES = [
  {
    name: 'events_subject',
    create: (db: Kysely<unknown>) =>
      db.schema
        .createIndex('events_subject')
        .on('events')
        .columns(['subject_kind', 'subject', 'id'])
        .where(sql.ref('job_id'), 'is', null),
  },
  {
    name: 'events_job',
    create: (db: Kysely<unknown>) =>
      db.schema
        .createIndex('events_job')
        .on('events')
        .columns(['job_id', 'id'])
        .where(sql.ref('job_id'), 'is not', null),
  },
];

/** Whether `stored` (sqlite_master's text, which spells CREATE INDEX in capitals) is `statement`. */
function sameStatement(stored: string | null | undefined, statement: string): boolean {
  const body = (s: string) => s.replace(/^\s*create\s+index\s+/i, '');
  return typeof stored === 'string' && body(stored) === body(statement);
}

/**
 * Rebuilds `table` with `job_id` INTEGER, the other way SQLite changes a column's type (steps 4 to
 * 10 of the procedure): a new table made by the table's own CREATE TABLE with that one type
 * changed, its rows copied, the old one dropped, the new one renamed, and then the old one's
 * indexes and triggers made again as they were, and its AUTOINCREMENT counter kept (so that the
 * ids of rows deleted before never come back).
 */
async function integerJobId(db: Kysely<unknown>, table: string): Promise<void> {
  const scratch = `${table}_repaired`;
  const { rows: tables } = await sql<{ sql: string }>`
    SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ${table}`.execute(db);
  const create = tables[0]!.sql;
  // Made by Kysely (0001_foundation), so spelt as it spells them; anything else is refused rather
  // than guessed at.
  const head = `CREATE TABLE "${table}" (`;
  const retyped = create.replace(/"job_id" text\b/i, '"job_id" integer');
  if (!create.startsWith(head) || retyped === create)
    throw new Error(`cannot make ${table}.job_id an integer: unexpected table definition ${create}`);
  const { rows: others } = await sql<{ sql: string }>`
    SELECT sql FROM sqlite_master
    WHERE tbl_name = ${table} AND type IN ('index', 'trigger') AND sql IS NOT NULL
    ORDER BY type, name`.execute(db);
  const { rows: columns } = await sql<{ name: string }>`
    SELECT name FROM pragma_table_info(${table}) ORDER BY cid`.execute(db);
  const seq = await sequenceOf(db, table);

  await sql.raw(`CREATE TABLE "${scratch}" (${retyped.slice(head.length)}`).execute(db);
  // The new column's INTEGER affinity turns each number an older berth stored as text ('12', or
  // '12.0' as better-sqlite3 binds a JavaScript number) into that integer as it is copied. A CAST
  // would do the same to those, but turn any other text into 0; such text (none that berth wrote)
  // stays as it was instead, as it would in a new database.
  const list = sql.join(columns.map((c) => sql.id(c.name)));
  await sql`INSERT INTO ${sql.id(scratch)} (${list}) SELECT ${list} FROM ${sql.id(table)}`.execute(db);
  await sql`DROP TABLE ${sql.id(table)}`.execute(db);
  await sql`ALTER TABLE ${sql.id(scratch)} RENAME TO ${sql.id(table)}`.execute(db);
  for (const { sql: statement } of others) await sql.raw(statement).execute(db);
  if (seq !== undefined) {
    // The renamed table's counter is the highest id copied (none if no row was).
    const top = Math.max(seq, (await sequenceOf(db, table)) ?? 0);
    await sql`DELETE FROM sqlite_sequence WHERE name = ${table}`.execute(db);
    await sql`INSERT INTO sqlite_sequence (name, seq) VALUES (${table}, CAST(${top} AS INTEGER))`.execute(db);
  }
  const { rows: broken } = await sql<{ parent: string }>`
    SELECT parent FROM pragma_foreign_key_check(${table})`.execute(db);
  if (broken.length > 0)
    throw new Error(
      `cannot make ${table}.job_id an integer: ${broken.length} rows would break their foreign keys (${broken[0]!.parent})`,
    );
}

/** `table`'s AUTOINCREMENT counter, if it has one. */
async function sequenceOf(db: Kysely<unknown>, table: string): Promise<number | undefined> {
  const { rows: exists } = await sql`
    SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'`.execute(db);
  if (exists.length === 0) return undefined;
  const { rows } = await sql<{ seq: number }>`SELECT seq FROM sqlite_sequence WHERE name = ${table}`.execute(
    db,
  );
  return rows[0]?.seq;
}
