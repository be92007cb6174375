/**
 * Every migration from each earlier schema, on a database the berth of that schema made and used
 * (test/fixtures/migrations, made by scripts/make-migration-fixtures.sh): today's berth opens it,
 * migrates it to the newest schema, and then reads what the old one wrote — its admin user, queue
 * and project, its jobs in their states with their timelines and logs — and the schema is the one
 * a new database gets. On SQLite and on PostgreSQL (whose store came with schema 0006), one after
 * the other in this process: scripts/test.mjs runs this file in one pass only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { FileLogStore, shardLogs, type LogStore } from '../../src/store/log-store.js';
import { MIGRATIONS } from '../../src/store/migrations/index.js';
import { PgLogStore } from '../../src/store/pg-log-store.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { listJobEvents } from '../../src/store/queries/events.js';
import { findJob } from '../../src/store/queries/jobs.js';
import { findProject } from '../../src/store/queries/projects.js';
import { findUserByName } from '../../src/store/queries/users.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Dialect, Store } from '../../src/store/store.js';
import { createTestDatabase, postgresUnreachable } from '../helpers/store.js';
import { schemaShape, type SchemaShape } from './schema-shape.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'migrations');

/** The jobs every fixture from schema 0002 on holds, by id, as the script ran them. */
const JOBS: [number, string][] = [
  [1, 'succeeded'],
  [2, 'failed'],
  [3, 'cancelled'],
  [4, 'running'],
];

/**
 * What a database made by an early berth keeps after every migration, against a new one: those
 * berths' 0001 was later edited in place rather than followed by a migration (54272cc took job
 * events out of the subject index; e948b9a made job ids INTEGER), so their databases never got
 * the change. A bigger index and TEXT-typed job ids; nothing reads wrong. Listed exactly, so that
 * any other difference fails.
 */
const DIVERGED: Record<string, { added: string[]; removed: string[] }> = {
  '0001-sqlite': {
    added: [
      'api_tokens.job_id TEXT notnull=0 default=null pk=0',
      'events.job_id TEXT notnull=0 default=null pk=0',
      'events events_job unique=0 (job_id, id) ',
      'events events_subject unique=0 (subject_kind, subject, id) ',
    ],
    removed: [
      'api_tokens.job_id INTEGER notnull=0 default=null pk=0',
      'events.job_id INTEGER notnull=0 default=null pk=0',
      'events events_job unique=0 (job_id, id) WHERE "job_id" is not null',
      'events events_subject unique=0 (subject_kind, subject, id) WHERE "job_id" is null',
    ],
  },
  '0002-sqlite': {
    added: ['events events_subject unique=0 (subject_kind, subject, id) '],
    removed: ['events events_subject unique=0 (subject_kind, subject, id) WHERE "job_id" is null'],
  },
};

/** What `got` has that `fresh` has not, and the other way round. */
function difference(got: SchemaShape, fresh: SchemaShape): { added: string[]; removed: string[] } {
  const all = (s: SchemaShape) => [...s.columns, ...s.indexes, ...s.constraints];
  return {
    added: all(got).filter((x) => !all(fresh).includes(x)),
    removed: all(fresh).filter((x) => !all(got).includes(x)),
  };
}

interface Opened {
  store: Store;
  logs: LogStore;
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
    const store = await openSqliteStore(join(dir, 'berth.db'));
    return {
      store,
      logs: new FileLogStore(join(dir, 'logs')),
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
          assert.deepEqual(
            difference(await schemaShape(db, dialect), fresh),
            DIVERGED[`${schema}-${dialect}`] ?? { added: [], removed: [] },
          );
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
