/**
 * The SQLite store's WAL checkpoints run in a thread of their own (store/sqlite-checkpoints.ts),
 * not in the commits of the server's only connection: with `wal_autocheckpoint`, the commit that
 * filled the WAL copied it into the database file while every request waited (45–60 ms each time
 * under the retention sweep of bench/history.ts). The database file still receives what is
 * committed, a store closed while the thread runs leaves its rows and no WAL behind, and a run of
 * writes that settles between its transactions keeps the WAL within its limit (a checkpoint beside
 * a steady writer never catches up on its own: the sweep of a million jobs grew it past 2.4 GB).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { waitFor } from '../helpers/wait.js';

const MB = 1024 * 1024;

/** One transaction of a megabyte into table `filler`. */
const megabyte = (db: Store) =>
  db.transaction((tx) =>
    sql`INSERT INTO filler (b) SELECT randomblob(65536) FROM (SELECT 1 UNION ALL SELECT 2 UNION ALL
      SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL
      SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10 UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL
      SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15 UNION ALL SELECT 16)`.execute(tx),
  );

let dir: string;
let file: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-checkpoints-'));
  file = join(dir, 'berth.db');
  store = await openSqliteStore(file, {
    checkpoints: { startBytes: 1 * MB, everyMs: 20, sizeLimitBytes: 2 * MB, settleMs: 10_000 },
  });
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('checkpoints of the SQLite store', () => {
  it('are never run by a commit of the store’s connection', async () => {
    const r = await sql<{ wal_autocheckpoint: number }>`PRAGMA wal_autocheckpoint`.execute(store.db);
    assert.equal(r.rows[0]!.wal_autocheckpoint, 0);
  });

  it('still bring what is committed into the database file, and a close leaves no WAL', async () => {
    await sql`CREATE TABLE filler (b BLOB NOT NULL)`.execute(store.db);
    const before = statSync(file).size;
    // 8 MB in the WAL: under the old threshold (10,000 pages, 40 MB) nothing would be copied.
    for (let i = 0; i < 8; i++) await megabyte(store);
    assert.ok(statSync(`${file}-wal`).size >= 8 * MB, 'the rows went into the WAL');
    await waitFor(
      'the rows checkpointed into the database file',
      () => statSync(file).size >= before + 8 * MB,
    );

    await store.close();
    assert.equal(existsSync(`${file}-wal`), false, 'the last connection closed took the WAL with it');
    store = await openSqliteStore(file, {
      checkpoints: { startBytes: 1 * MB, everyMs: 20, sizeLimitBytes: 2 * MB, settleMs: 10_000 },
    });
    const n = await sql<{ n: number }>`SELECT count(*) AS n FROM filler`.execute(store.db);
    assert.equal(n.rows[0]!.n, 128);
  });

  it('stay within the WAL’s limit under a steady run of writes that settles between them', async () => {
    let most = 0;
    for (let i = 0; i < 40; i++) {
      await megabyte(store);
      most = Math.max(most, statSync(`${file}-wal`).size);
      await store.settle!();
    }
    // The limit, and what one transaction adds before the next one starts it again.
    assert.ok(most <= 4 * MB, `the WAL grew to ${(most / MB).toFixed(1)} MB`);
  });
});
