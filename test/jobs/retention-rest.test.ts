/**
 * The retention sweep rests after each batch as long as the batch held the store, on either
 * store: it never has more than half of the store's time (SQLite's only connection; PostgreSQL's
 * CPU and disk, shared with the server's requests), and a submission that came during a batch
 * finds the store free once that batch is over. The store here is made slow (each of the
 * sweep's transactions spins 3 ms), so that a batch's length is known to be more than the
 * event loop's turn the sweep used to yield between batches.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sweepRetention } from '../../src/service/upkeep/retention.js';
import type { Store } from '../../src/store/store.js';
import { seedJob } from '../helpers/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SLOW_MS = 3;
const JOBS = 240;

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

it('rests between batches as long as the last batch held the store', async () => {
  const store = s.server.context.store;
  const old = Date.now() - 10 * 86_400_000;
  const ids: number[] = [];
  for (let i = 0; i < JOBS; i++) ids.push((await seedJob(store)).id);
  await store.db
    .updateTable('jobs')
    .set({ state: 'succeeded', cleaned_up: 1, created_at: old, finished_at: old + 1000 })
    .where('id', 'in', ids)
    .execute();

  // Each transaction of the sweep: when it started and ended, 3 ms at least.
  const spans: [number, number][] = [];
  const slow: Store = {
    ...store,
    transaction: (fn) =>
      store.transaction(async (tx) => {
        const t0 = performance.now();
        while (performance.now() - t0 < SLOW_MS); // the store is slow: nothing else runs meanwhile
        const out = await fn(tx);
        spans.push([t0, performance.now()]);
        return out;
      }),
  };
  const swept = await sweepRetention(
    { ...s.server.context, store: slow },
    { jobs: 86_400, audit: null, ledger: null },
  );
  assert.equal(swept.jobs, JOBS);
  assert.ok(spans.length >= 3, `${spans.length} batches`);
  for (let i = 1; i < spans.length; i++) {
    const held = spans[i - 1]![1] - spans[i - 1]![0];
    const rested = spans[i]![0] - spans[i - 1]![1];
    // A timer may fire up to a millisecond early against performance.now().
    assert.ok(
      rested >= held - 1,
      `batch ${i} held the store ${held.toFixed(1)} ms, then rested ${rested.toFixed(1)} ms`,
    );
  }
});
