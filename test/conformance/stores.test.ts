/**
 * The store contract (store-suite.ts) on SQLite and on PostgreSQL, one after the other in this
 * process, so that the two are held to the same assertions side by side. scripts/test.mjs runs
 * this file in one pass only: it covers both stores itself.
 */
import { storeConformance } from './store-suite.js';
import { STORE_KINDS } from './stores.js';

for (const kind of STORE_KINDS) storeConformance(kind);
