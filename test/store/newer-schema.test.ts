/**
 * A berth refuses, in one line, a database whose schema a newer berth migrated (a migration it
 * does not know), before it migrates anything. On either store.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { MIGRATIONS, NewerStoreError } from '../../src/store/migrations/index.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { scratchDir } from '../helpers/scratch.js';

describe('a database newer than this berth', () => {
  const dir = scratchDir('berth-newer-');
  let pg: TestDatabase | undefined;
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await pg?.drop();
  });

  const open = async (): Promise<Store> => {
    if (TEST_STORE === 'sqlite') return openSqliteStore(join(dir, 'berth.db'));
    pg ??= await createTestDatabase();
    return openPostgresStore(pg.url, { max: 2 });
  };

  it('is refused in one line, naming the migration', async () => {
    const first = await open();
    await sql`INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_the_future', '2099-01-01T00:00:00.000Z')`.execute(
      first.db,
    );
    await first.close();

    await assert.rejects(open(), (e: unknown) => {
      assert.ok(e instanceof NewerStoreError, String(e));
      assert.equal(
        e.message,
        `the database was written by a newer berth (its schema has migration 9999_from_the_future; this berth knows up to ${MIGRATIONS.at(-1)![0]}): run that newer berth, or restore a backup this one took`,
      );
      return true;
    });
  });
});
