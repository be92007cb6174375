/**
 * Every migration from each earlier schema, on a database the berth of that schema made and used
 * (test/fixtures/migrations, made by scripts/make-migration-fixtures.sh): today's berth opens it,
 * migrates it to the newest schema, and then reads what the old one wrote — its admin user, queue
 * and project, its jobs in their states with their timelines and logs — and the schema is the one
 * a new database gets, exactly: the databases of the first berths (schemas 0001 to 0003, whose
 * 0001 was later edited in place) get there through 0020_schema_repair, tested on its own below.
 * On SQLite and on PostgreSQL (whose store came with schema 0006), one after the other in this
 * process: scripts/test.mjs runs this file in one pass only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import { FileLogStore, shardLogs, type LogStore } from '../../src/store/log-store.js';
import { schemaRepair } from '../../src/store/migrations/0020_schema_repair.js';
import { migrate, MIGRATIONS } from '../../src/store/migrations/index.js';
import { PgLogStore } from '../../src/store/pg-log-store.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { appendEvent, listJobEvents } from '../../src/store/queries/events.js';
import { findJob } from '../../src/store/queries/jobs.js';
import { findProject } from '../../src/store/queries/projects.js';
import { findToken, insertJobToken } from '../../src/store/queries/tokens.js';
import { findUserByName } from '../../src/store/queries/users.js';
import type { Database } from '../../src/store/schema.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Db, Dialect, Store } from '../../src/store/store.js';
import { hashToken, newToken } from '../../src/domain/tokens.js';
import { createTestDatabase, postgresUnreachable } from '../helpers/store.js';
import { schemaShape, type SchemaShape } from './schema-shape.js';
import { ROOT } from '../helpers/root.js';

const FIXTURES = join(ROOT, 'test', 'fixtures', 'migrations');

/** The jobs every fixture from schema 0002 on holds, by id, as the script ran them. */
const JOBS: [number, string][] = [
  [1, 'succeeded'],
  [2, 'failed'],
  [3, 'cancelled'],
  [4, 'running'],
];

/** What `got` has that `fresh` has not, and the other way round. */
function difference(got: SchemaShape, fresh: SchemaShape): { added: string[]; removed: string[] } {
  const all = (s: SchemaShape) => [...s.columns, ...s.indexes, ...s.constraints];
  return {
    added: all(got).filter((x) => !all(fresh).includes(x)),
    removed: all(fresh).filter((x) => !all(got).includes(x)),
  };
}

/** The tables 0020_schema_repair may rebuild: their rows, by key. */
const REBUILT = { events: 'id', api_tokens: 'hash' } as const;

type Rows = Record<keyof typeof REBUILT, Record<string, unknown>[]>;

/**
 * The rows of the tables 0020_schema_repair may rebuild, with `job_id` as a number: an early
 * database holds it as text ('7.0': better-sqlite3 binds a JavaScript number as a real, which a
 * TEXT column keeps as text).
 */
async function rebuiltRows(db: Db): Promise<Rows> {
  const out = {} as Rows;
  for (const [table, key] of Object.entries(REBUILT) as [keyof typeof REBUILT, string][]) {
    const { rows } = await sql<Record<string, unknown>>`
      SELECT * FROM ${sql.table(table)} ORDER BY ${sql.ref(key)}`.execute(db);
    out[table] = rows.map((r) => ({ ...r, job_id: r.job_id === null ? null : Number(r.job_id) }));
  }
  return out;
}

/** The storage classes of the `job_id`s in the tables 0020_schema_repair may rebuild. */
async function jobIdTypes(db: Db): Promise<string[]> {
  const { rows } = await sql<{ t: string }>`
    SELECT typeof(job_id) AS t FROM events UNION SELECT typeof(job_id) FROM api_tokens ORDER BY 1`.execute(
    db,
  );
  return rows.map((r) => r.t);
}

/** A SQLite database opened as the store opens it, migrated by the berth that knows `known`. */
async function openSqliteAt(file: string, known: typeof MIGRATIONS): Promise<Kysely<Database>> {
  const sqlite = new BetterSqlite3(file);
  sqlite.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  await migrate(db as unknown as Kysely<unknown>, 'sqlite', known);
  return db;
}

/** The migrations of the berth before 0020_schema_repair. */
const BEFORE_REPAIR = MIGRATIONS.slice(
  0,
  MIGRATIONS.findIndex(([, m]) => m === schemaRepair),
);

interface Opened {
  store: Store;
  logs: LogStore;
  /** On SQLite, the rows of the tables 0020_schema_repair may rebuild, as the old berth left them. */
  before?: Rows;
  dispose(): Promise<void>;
}

/** Opens the fixture at `file` with today's berth (which migrates it), in a place of its own. */
async function openFixture(dialect: Dialect, file: string): Promise<Opened> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'berth-fixture-'));
    const tar = spawnSync('tar', ['-xzf', file, '-C', dir], { encoding: 'utf8' });
    assert.equal(tar.status, 0, tar.stderr);
    // What the server does at start, before it opens the logs: older berths kept them flat.
    await shardLogs(join(dir, 'logs'));
    const old = new Kysely<Database>({
      dialect: new SqliteDialect({ database: new BetterSqlite3(join(dir, 'berth.db')) }),
    });
    const before = await rebuiltRows(old);
    await old.destroy();
    const store = await openSqliteStore(join(dir, 'berth.db'));
    return {
      store,
      logs: new FileLogStore(join(dir, 'logs')),
      before,
      dispose: async () => {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(gunzipSync(readFileSync(file)).toString('utf8'));
  } finally {
    await client.end();
  }
  const store = await openPostgresStore(database.url, { max: 2 });
  return {
    store,
    logs: new PgLogStore(store.db),
    dispose: async () => {
      await store.close();
      await database.drop();
    },
  };
}

async function freshShape(dialect: Dialect): Promise<SchemaShape> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'berth-fresh-'));
    const store = await openSqliteStore(join(dir, 'berth.db'));
    try {
      return await schemaShape(store.db, dialect);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const database = await createTestDatabase();
  const store = await openPostgresStore(database.url, { max: 2 });
  try {
    return await schemaShape(store.db, dialect);
  } finally {
    await store.close();
    await database.drop();
  }
}

const unreachable = await postgresUnreachable();

for (const dialect of ['sqlite', 'postgres'] as const) {
  const suffix = dialect === 'sqlite' ? '-sqlite.tar.gz' : '-postgres.sql.gz';
  const fixtures = readdirSync(FIXTURES)
    .filter((f) => f.endsWith(suffix))
    .sort();
  describe(
    `migrations on ${dialect}, from databases older berths made`,
    {
      ...(dialect === 'postgres' && unreachable ? { skip: unreachable } : {}),
    },
    () => {
      let fresh: SchemaShape;
      before(async () => {
        fresh = await freshShape(dialect);
      });

      it('has a fixture for every released schema', () => {
        // A new migration needs its fixture: run scripts/make-migration-fixtures.sh with its number.
        assert.ok(fixtures.length > 0);
        assert.equal(fixtures.at(-1), `${MIGRATIONS.at(-1)![0].slice(0, 4)}${suffix}`);
      });

      for (const file of fixtures) {
        const schema = file.slice(0, 4);
        it(`from schema ${schema}`, async () => {
          const opened = await openFixture(dialect, join(FIXTURES, file));
          after(() => opened.dispose());
          const { db } = opened.store;
          assert.deepEqual(difference(await schemaShape(db, dialect), fresh), { added: [], removed: [] });
          if (opened.before) {
            // The columns the old berth had (later migrations added some), row for row.
            const after = await rebuiltRows(db);
            for (const table of Object.keys(REBUILT) as (keyof typeof REBUILT)[])
              assert.deepEqual(
                after[table].map((r) =>
                  Object.fromEntries(Object.keys(opened.before![table][0] ?? {}).map((k) => [k, r[k]])),
                ),
                opened.before[table],
                `${table}, row for row`,
              );
            for (const t of await jobIdTypes(db)) assert.ok(['integer', 'null'].includes(t), t);
          }
          assert.ok(await findUserByName(db, 'admin'), 'the admin user');
          assert.ok(await findProject(db, 'default'), 'the default project');
          const queue = await db
            .selectFrom('cluster_queues')
            .select('name')
            .where('name', '=', 'default')
            .executeTakeFirst();
          assert.ok(queue, 'the default queue');
          if (schema === '0001') return; // no jobs yet
          for (const [id, state] of JOBS) {
            assert.equal((await findJob(db, id))?.state, state, `job ${id}`);
            const events = await listJobEvents(db, id);
            assert.ok(events.length >= 2, `job ${id} has its timeline (${events.length} events)`);
          }
          assert.equal(await text(opened.logs.read(1)), `hello from ${schema}\nline two\n`);
          assert.match(await text(opened.logs.read(2)), /failing/);
        });
      }
    },
  );
}

describe('0020_schema_repair, on SQLite', () => {
  let fresh: SchemaShape;
  before(async () => {
    fresh = await freshShape('sqlite');
  });

  it('makes the job ids of a database from schema 0001 integers, keeping every row', async () => {
    // The 0001 fixture as it is after years of use by the berth before the repair: jobs' events and
    // tokens written into its TEXT job_id columns, and its newest event gone (as retention does).
    const dir = mkdtempSync(join(tmpdir(), 'berth-repair-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const tar = spawnSync('tar', ['-xzf', join(FIXTURES, '0001-sqlite.tar.gz'), '-C', dir], {
      encoding: 'utf8',
    });
    assert.equal(tar.status, 0, tar.stderr);
    const old = await openSqliteAt(join(dir, 'berth.db'), BEFORE_REPAIR);
    const token = newToken('job');
    for (const jobId of [7, 12]) {
      for (const type of ['submitted', 'admitted', 'succeeded'])
        await appendEvent(
          old,
          { subjectKind: 'job', subject: String(jobId), project: 'default', jobId, type, message: type },
          1_700_000_000_000,
        );
    }
    await insertJobToken(old, token, 12, 'agent', 1_700_000_000_000);
    await appendEvent(old, { subjectKind: 'user', subject: 'admin', type: 'gone', message: 'x' }, 0);
    await sql`DELETE FROM events WHERE type = 'gone'`.execute(old);
    assert.deepEqual(await jobIdTypes(old), ['null', 'text'], 'the old berth wrote text job ids');
    assert.equal((await listJobEvents(old, 7)).length, 3, 'which it read back');
    const before = await rebuiltRows(old);
    const sequence = async (db: Db) =>
      (await sql<{ seq: number }>`SELECT seq FROM sqlite_sequence WHERE name = 'events'`.execute(db)).rows[0]
        ?.seq;
    const seq = await sequence(old);
    assert.ok(seq! > Math.max(...before.events.map((e) => Number(e.id))));
    await old.destroy();

    const db = await openSqliteAt(join(dir, 'berth.db'), MIGRATIONS);
    after(() => db.destroy());
    assert.deepEqual(difference(await schemaShape(db, 'sqlite'), fresh), { added: [], removed: [] });
    assert.deepEqual(await rebuiltRows(db), before, 'every event and token, as they were');
    assert.deepEqual(await jobIdTypes(db), ['integer', 'null']);
    for (const jobId of [7, 12])
      assert.deepEqual(
        (await listJobEvents(db, jobId)).map((e) => [e.type, e.subject]),
        ['submitted', 'admitted', 'succeeded'].map((t) => [t, String(jobId)]),
        `job ${jobId}'s timeline`,
      );
    assert.equal((await findToken(db, hashToken(token)))?.jobId, 12, "job 12's token");
    // The AUTOINCREMENT counter survived the rebuild: a deleted event's id is never given again.
    assert.equal(await sequence(db), seq);
    await appendEvent(db, { subjectKind: 'user', subject: 'admin', type: 'next', message: 'x' }, 0);
    const next = await db
      .selectFrom('events')
      .select('id')
      .where('type', '=', 'next')
      .executeTakeFirstOrThrow();
    assert.equal(Number(next.id), seq! + 1);
    // The job events are found through events_job, the others through events_subject.
    const plan = await sql<{ detail: string }>`
      EXPLAIN QUERY PLAN SELECT * FROM events WHERE job_id = 7 ORDER BY id`.execute(db);
    assert.match(plan.rows.map((r) => r.detail).join('\n'), /\bevents_job\b/);
    assert.deepEqual((await sql`PRAGMA foreign_key_check`.execute(db)).rows, []);
    assert.deepEqual((await sql`PRAGMA integrity_check`.execute(db)).rows, [{ integrity_check: 'ok' }]);
    assert.deepEqual((await sql`PRAGMA foreign_keys`.execute(db)).rows, [{ foreign_keys: 1 }], 'back on');
  });

  it('changes nothing in a database made since', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-repair-fresh-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const db = await openSqliteAt(join(dir, 'berth.db'), BEFORE_REPAIR);
    after(() => db.destroy());
    // Every change to the schema bumps schema_version; every row written counts in total_changes.
    const state = async () =>
      (
        await sql<{ v: number; changes: number }>`
          SELECT (SELECT schema_version FROM pragma_schema_version) AS v, total_changes() AS changes`.execute(
          db,
        )
      ).rows[0];
    const master = async () =>
      (await sql`SELECT type, name, rootpage, sql FROM sqlite_master ORDER BY name`.execute(db)).rows;
    const [was, schema] = [await state(), await master()];
    await schemaRepair.up(db as unknown as Kysely<unknown>, 'sqlite');
    assert.deepEqual(await state(), was);
    assert.deepEqual(await master(), schema);
  });
});
