/**
 * A follower's copy of the leader's figures (`FiguresReader`) when its replica stops: a read
 * under way is waited for, and nothing is read after — the store closes next, and a read against
 * a closed store was logged as an error at every other stop of a PostgreSQL server.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FiguresReader } from '../../src/replicas/live-figures.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-figures-'));
  store = await openSqliteStore(join(dir, 'berth.db'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('a stopping figures reader', () => {
  it('finishes the read under way, and reads nothing once the store is closed', async () => {
    const figures = { term: 3, queues: {}, factories: [], resources: [] };
    await store.db
      .insertInto('live_figures')
      .values({ name: 'figures', term: 3, data: JSON.stringify(figures), at: Date.now() })
      .execute();
    const errors: unknown[] = [];
    const reader = new FiguresReader(store.db, (e) => errors.push(e));
    reader.refresh();
    await reader.stop();
    assert.deepEqual(reader.latest, figures, 'stop() returned before the read under way ended');
    await store.close();
    // A notice that arrives late (the bus closes just before): no read starts.
    reader.refresh();
    await reader.stop();
    assert.deepEqual(errors, []);
  });
});
