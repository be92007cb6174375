/**
 * Write-behind on PostgreSQL (src/store/pg-write-behind.ts): a group commit's writes that answer
 * nothing go together with their parameters written in as literals. What it must never do: let a
 * value change on its way (or escape its literal), reorder a write after a read that follows it,
 * or keep a write whose caller needs an answer.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { describe, it } from 'node:test';
import { isStoreUnavailable } from '../../src/store/errors.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { inlined } from '../../src/store/pg-write-behind.js';
import type { Db } from '../../src/store/store.js';
import { storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';
import { TEST_STORE } from '../helpers/store.js';

describe('which statements are kept (pure)', () => {
  it('writes without RETURNING, with their parameters written in', () => {
    assert.equal(
      inlined('update "jobs" set "reason" = $1, "attempts" = $2 where "id" = $3', ["it's", 2, 10n]),
      `update "jobs" set "reason" = 'it''s', "attempts" = 2 where "id" = 10`,
    );
    assert.equal(
      inlined('insert into "t" ("a", "b") values ($1, $2)', [null, true]),
      'insert into "t" ("a", "b") values (NULL, TRUE)',
    );
    assert.equal(inlined('select pg_notify($1, $2)', ['c', '{}']), `select pg_notify('c', '{}')`);
  });

  it('nothing that answers, nothing with a quote of its own, no value it cannot write', () => {
    assert.equal(inlined('insert into "t" ("a") values ($1) returning "id"', [1]), undefined);
    assert.equal(inlined('select * from "t" where "a" = $1', [1]), undefined);
    assert.equal(inlined(`update "t" set "a" = 'x' where "b" = $1`, [1]), undefined);
    assert.equal(inlined('update "t" set "a" = $$x$$', []), undefined);
    assert.equal(inlined('update "t" set "a" = $1', [Number.NaN]), undefined);
    assert.equal(inlined('update "t" set "a" = $1', [new Date()]), undefined);
    assert.equal(inlined('update "t" set "a" = $1', [Buffer.from('x')]), undefined);
    assert.equal(inlined('update "t" set "a" = $2', [1]), undefined); // a parameter it was not given
  });

  it('no text with a NUL: the simple protocol would cut the batch short (a protocol violation)', () => {
    assert.equal(inlined('update "t" set "a" = $1', ['a\u0000b']), undefined);
    assert.equal(inlined('update "t" set "a" = $1', ['a\u0001b']), `update "t" set "a" = 'a\u0001b'`);
  });

  it('a protocol violation (08P01) is not the store being unavailable; a lost connection is', () => {
    assert.equal(isStoreUnavailable({ code: '08P01' }), false);
    assert.equal(isStoreUnavailable({ code: '08006' }), true);
    assert.equal(isStoreUnavailable({ code: '57P01' }), true);
  });
});

const server = useTestServer({}, async () => {
  await sql`CREATE TABLE wb_probe (k text PRIMARY KEY, v text, n bigint)`.execute(storeOf(server()).db);
});

const pgOnly = {
  skip: TEST_STORE !== 'postgres' && 'write-behind is PostgreSQL only (SQLite has no round trips)',
};

describe('write-behind in a group commit', () => {
  it('any text comes back exactly as written (quotes, backslashes, $1, unicode)', pgOnly, async () => {
    const store = storeOf(server());
    const commits = new GroupCommit(store);
    let i = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.string({ unit: 'binary' }).map((s) => s.replaceAll('\0', '')),
          { minLength: 1, maxLength: 20 },
        ),
        fc.integer({ min: -(2 ** 52), max: 2 ** 52 }),
        async (values, n) => {
          const keys = values.map(() => `p${i++}`);
          await Promise.all(
            values.map((v, k) =>
              commits.run((tx) =>
                sql`INSERT INTO wb_probe (k, v, n) VALUES (${keys[k]}, ${v}, ${n})`.execute(tx),
              ),
            ),
          );
          const rows = await sql<{ k: string; v: string; n: number }>`SELECT k, v, n FROM wb_probe
            WHERE k IN (${sql.join(keys)})`.execute(store.db);
          const got = new Map(rows.rows.map((r) => [r.k, r]));
          keys.forEach((k, j) => {
            assert.equal(got.get(k)?.v, values[j]);
            assert.equal(Number(got.get(k)?.n), n);
          });
        },
      ),
      { numRuns: 40 },
    );
  });

  it('a read sees the writes made before it in its transaction', pgOnly, async () => {
    const commits = new GroupCommit(storeOf(server()));
    const seen = await Promise.all([
      commits.run((tx) => sql`INSERT INTO wb_probe (k, v) VALUES ('r1', 'first')`.execute(tx)),
      commits.run(async (tx: Db) => {
        await sql`UPDATE wb_probe SET v = ${'second'} WHERE k = ${'r1'}`.execute(tx);
        const r = await sql<{ v: string }>`SELECT v FROM wb_probe WHERE k = ${'r1'}`.execute(tx);
        return r.rows[0]?.v;
      }),
    ]);
    assert.equal(seen[1], 'second');
  });

  it(
    'a NUL fails its unit alone with a data error (22021), never one taken for the store being down',
    pgOnly,
    async () => {
      const commits = new GroupCommit(storeOf(server()));
      const put = (k: string, v: string) => (tx: Db) =>
        sql`INSERT INTO wb_probe (k, v) VALUES (${k}, ${v})`.execute(tx);
      const alone = await commits.run(put('n0', 'a\u0000b')).then(
        () => undefined,
        (e: unknown) => e,
      );
      const together = await Promise.allSettled([
        commits.run(put('n1', 'x')),
        commits.run(put('n2', 'a\u0000')),
        commits.run(put('n3', 'y')),
      ]);
      assert.deepEqual(
        together.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      );
      for (const e of [alone, (together[1] as PromiseRejectedResult).reason]) {
        assert.equal((e as { code?: unknown }).code, '22021', String(e));
        assert.equal(isStoreUnavailable(e), false);
      }
      const rows = await sql<{ k: string }>`SELECT k FROM wb_probe WHERE k LIKE 'n%' ORDER BY k`.execute(
        storeOf(server()).db,
      );
      assert.deepEqual(
        rows.rows.map((r) => r.k),
        ['n1', 'n3'],
      );
    },
  );

  it('a write that fails among kept ones fails its unit alone', pgOnly, async () => {
    const commits = new GroupCommit(storeOf(server()));
    const put = (k: string) => (tx: Db) => sql`INSERT INTO wb_probe (k) VALUES (${k})`.execute(tx);
    const results = await Promise.allSettled([
      commits.run(put('f1')),
      commits.run(put('f1')), // a duplicate, found only when the kept writes are sent
      commits.run(put('f2')),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /duplicate key/);
    const rows = await sql<{ k: string }>`SELECT k FROM wb_probe WHERE k IN ('f1', 'f2') ORDER BY k`.execute(
      storeOf(server()).db,
    );
    assert.deepEqual(
      rows.rows.map((r) => r.k),
      ['f1', 'f2'],
    );
  });
});
