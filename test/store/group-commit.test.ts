/**
 * The group commit on the suite's store (SQLite or PostgreSQL): units that arrive together share
 * one transaction; a unit that fails is rolled back alone and gets its own error; and on
 * PostgreSQL a batch that loses a deadlock to another transaction is run again, not failed.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { describe, it } from 'node:test';
import { GroupCommit } from '../../src/store/group-commit.js';
import type { Db } from '../../src/store/store.js';
import { storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';
import { TEST_STORE } from '../helpers/store.js';

const server = useTestServer({}, async () => {
  await sql`CREATE TABLE gc_probe (k text PRIMARY KEY, v integer NOT NULL)`.execute(storeOf(server()).db);
});

const put =
  (k: string, v = 0) =>
  (tx: Db) =>
    sql`INSERT INTO gc_probe (k, v) VALUES (${k}, ${v})`.execute(tx);
const keys = async () =>
  (await sql<{ k: string }>`SELECT k FROM gc_probe ORDER BY k`.execute(storeOf(server()).db)).rows.map(
    (r) => r.k,
  );

describe('group commit', () => {
  it('commits units that arrive together; a failing unit is rolled back alone with its own error', async () => {
    const commits = new GroupCommit(storeOf(server()));
    const results = await Promise.allSettled([
      commits.run(put('a1')),
      commits.run(async (tx) => {
        await put('a2')(tx);
        await put('a1')(tx); // a duplicate: this unit fails, and its a2 goes with it
      }),
      commits.run(put('a3')),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(await keys(), ['a1', 'a3']);
  });

  it('a unit alone that fails lands nothing', async () => {
    const commits = new GroupCommit(storeOf(server()));
    await assert.rejects(
      commits.run(async (tx) => {
        await put('b1')(tx);
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.ok(!(await keys()).includes('b1'));
  });

  it(
    'a batch that loses a deadlock is run again: both sides land',
    { skip: TEST_STORE !== 'postgres' && 'deadlocks between connections happen on PostgreSQL only' },
    async () => {
      const store = storeOf(server());
      await sql`INSERT INTO gc_probe (k, v) VALUES ('row1', 0), ('row2', 0)`.execute(store.db);
      const bump = (k: string) => (tx: Db) => sql`UPDATE gc_probe SET v = v + 1 WHERE k = ${k}`.execute(tx);
      // Two group commits (two connections) take the two rows in opposite orders, each waiting
      // until the other holds its first row: a deadlock, which PostgreSQL breaks by failing one.
      const signal = () => {
        let resolve!: () => void;
        const promise = new Promise<void>((r) => (resolve = r));
        return { promise, resolve };
      };
      const aHolds = signal();
      const bHolds = signal();
      const side = (first: string, second: string, mine: typeof aHolds, theirs: typeof aHolds) =>
        new GroupCommit(store).run(async (tx) => {
          await bump(first)(tx);
          mine.resolve();
          await theirs.promise;
          await bump(second)(tx);
        });
      await Promise.all([side('row1', 'row2', aHolds, bHolds), side('row2', 'row1', bHolds, aHolds)]);
      const rows = await sql<{ k: string; v: number }>`SELECT k, v FROM gc_probe
        WHERE k IN ('row1', 'row2') ORDER BY k`.execute(store.db);
      assert.deepEqual(
        rows.rows.map((r) => [r.k, Number(r.v)]),
        [
          ['row1', 2],
          ['row2', 2],
        ],
      );
    },
  );
});
