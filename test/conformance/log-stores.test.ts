/**
 * The log store contract (log-store-suite.ts) on both stores in this process: FileLogStore in a
 * temporary directory, as the server keeps logs beside SQLite, and PgLogStore in a fresh
 * PostgreSQL database (skipped, saying why, when PostgreSQL cannot be reached). scripts/test.mjs
 * runs this file in one pass only: it covers both stores itself.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLogStore, JOBS_PER_LOG_DIR } from '../../src/store/log-store.js';
import { PgLogStore } from '../../src/store/pg-log-store.js';
import { seedJob } from '../helpers/db.js';
import { logStoreConformance } from './log-store-suite.js';
import { STORE_KINDS } from './stores.js';

logStoreConformance({
  name: 'file',
  async open() {
    const dir = mkdtempSync(join(tmpdir(), 'berth-logs-'));
    // Ids from just below a directory's end, so that the suite's jobs span two directories.
    let next = JOBS_PER_LOG_DIR - 3;
    return {
      logs: new FileLogStore(dir),
      newJob: () => Promise.resolve(next++),
      dispose: () => Promise.resolve(rmSync(dir, { recursive: true, force: true })),
    };
  },
});

const postgres = STORE_KINDS.find((k) => k.dialect === 'postgres')!;
logStoreConformance({
  name: 'postgres',
  ...(postgres.skip ? { skip: postgres.skip } : {}),
  async open() {
    const { store, dispose } = await postgres.open();
    return {
      logs: new PgLogStore(store.db),
      // PgLogStore reads the job's state to know whether a follow may end: an unfinished job.
      newJob: async () => (await seedJob(store)).id,
      dispose,
    };
  },
});
