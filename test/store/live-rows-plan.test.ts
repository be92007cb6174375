/**
 * A restart reads the workers and resource instances still alive through their partial indexes
 * (workers_live, resource_instances_live), not every row ever made: with 10 million ended jobs
 * the scan of their destroyed workers was 4 s of every restart (bench/history.ts). SQLite uses a
 * partial index only when the query's WHERE implies the index's, which `state IN (?, ?, ?)` with
 * bound values does not; the plan says which it does.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { LIVE_STATE } from '../../src/store/queries/workers.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-live-plan-'));
  store = await openSqliteStore(join(dir, 'berth.db'));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the live workers and instances a restart reads', () => {
  for (const [table, index] of [
    ['workers', 'workers_live'],
    ['resource_instances', 'resource_instances_live'],
  ] as const) {
    it(`come from ${index}, not a scan of ${table}`, async () => {
      const q = store.db.selectFrom(table).selectAll().where(LIVE_STATE).compile();
      const plan = await sql<{ detail: string }>`EXPLAIN QUERY PLAN ${sql.raw(q.sql)}`.execute(store.db);
      const details = plan.rows.map((r) => r.detail).join('; ');
      assert.match(details, new RegExp(`USING (COVERING )?INDEX ${index}\\b`), details);
    });
  }
});
