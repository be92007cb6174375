/**
 * A rolling upgrade on PostgreSQL (store/pg-schema-gate.ts): a berth and an older one (a berth
 * that knows one migration fewer, as the release before would) on one database never both write.
 * The newer migrates only once the older is gone; the older, once the schema has moved on, can
 * neither write nor open it again, and says why in one line. Two stores in this process, each
 * with its own pool, stand for two replicas: the gate is in the connections, not the process.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MIGRATIONS, NewerStoreError } from '../../src/store/migrations/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { initSetting } from '../../src/store/queries/settings.js';
import type { Store } from '../../src/store/store.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { OLDER_MIGRATIONS as OLDER, query, REFUSAL, schemaOf } from './upgrade-support.js';

describe(
  'a rolling upgrade on PostgreSQL',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const databases: TestDatabase[] = [];
    const stores: Store[] = [];
    after(async () => {
      for (const s of stores) await s.close().catch(() => {});
      for (const d of databases) await d.drop();
    });
    const database = async () => {
      const d = await createTestDatabase();
      databases.push(d);
      return d.url;
    };
    const older = async (url: string) => {
      const s = await openPostgresStore(url, { migrations: OLDER, max: 2, applicationName: 'berth-older' });
      stores.push(s);
      return s;
    };

    it('migrates only once the older replicas are gone, which then cannot open it', async () => {
      const url = await database();
      const old = await older(url);
      await initSetting(old.db, 'before', 'older');
      assert.equal(await schemaOf(url), OLDER.length);

      let waiting: string | undefined;
      const opening = openPostgresStore(url, { max: 2, onWaiting: (line) => (waiting = line) });
      const line = await waitFor('the newer berth to say it waits', () => waiting);
      assert.match(
        line,
        new RegExp(`^waiting to migrate the database from ${OLDER.at(-1)![0]} to ${MIGRATIONS.at(-1)![0]}`),
      );
      // The older one still leads and writes; the schema is still its own.
      await initSetting(old.db, 'while-waiting', 'older');
      assert.equal(await schemaOf(url), OLDER.length);

      await old.close();
      const newer = await opening;
      stores.push(newer);
      assert.equal(await schemaOf(url), MIGRATIONS.length);
      assert.equal((await newer.db.selectFrom('settings').select('name').execute()).length, 2);

      await assert.rejects(older(url), (e: unknown) => {
        assert.ok(e instanceof NewerStoreError, String(e));
        assert.equal(e.message, REFUSAL);
        return true;
      });
    });

    it('refuses every write of an older replica that was cut off while the newer migrated', async () => {
      const url = await database();
      const old = await older(url);
      await initSetting(old.db, 'before', 'older');
      // Its connections end (a network partition, a database restart): nothing of it holds the
      // schema, so a newer berth migrates at once.
      await query(
        url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'berth-older'",
      );
      await waitFor(
        'the older connections to end',
        async () =>
          (await query(url, "SELECT 1 FROM pg_stat_activity WHERE application_name = 'berth-older'"))
            .rowCount === 0,
      );
      stores.push(await openPostgresStore(url, { max: 2 }));
      assert.equal(await schemaOf(url), MIGRATIONS.length);

      // The older replica's next connections find a schema it does not know: nothing it sends
      // reaches the database (a first try may meet a connection that died with the partition).
      const refused = await waitFor('the older replica to be refused', async () => {
        try {
          await initSetting(old.db, 'after', 'older');
          return 'written';
        } catch (e) {
          return e instanceof NewerStoreError ? e.message : undefined;
        }
      });
      assert.equal(refused, REFUSAL);
      const rows = await query(url, "SELECT 1 FROM settings WHERE name = 'after'");
      assert.equal(rows.rowCount, 0);
    });
  },
);
