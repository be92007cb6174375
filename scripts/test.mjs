#!/usr/bin/env node
// Runs the test suite with Node's own test runner (TypeScript through tsx), once per store: on
// SQLite, then on PostgreSQL (127.0.0.1:5432, or $BERTH_TEST_PG_URL), as Kysely's tests loop over
// dialects. BERTH_TEST_STORE=sqlite or =postgres runs one.
// Usage: node scripts/test.mjs [path-substring ...]   e.g. `node scripts/test.mjs scheduler`
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import pg from 'pg';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

const filters = process.argv.slice(2);
const files = find('test')
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

const PG_URL = process.env.BERTH_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// Names this run's test databases (test/helpers/store.ts), so that its clean-up drops only its own:
// two runs on one PostgreSQL server (a developer's and CI's) must not drop each other's.
const RUN = process.env.BERTH_TEST_RUN ?? randomBytes(4).toString('hex');

/** Drops the databases this run made and did not drop (servers killed by tests). */
async function dropTestDatabases() {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT datname FROM pg_database WHERE datname LIKE $1', [
      `berth\\_test\\_${RUN}\\_%`,
    ]);
    for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * Suites whose subject is a client of the HTTP API or a system outside berth — the CLI, the
 * dashboard in Chromium, shell completion, the simulator, Slurm and its factory — run in the first
 * store's pass only: what they exercise of the server goes through the API, whose routes the api,
 * jobs, store, controller, replicas and conformance suites (the slurm factory's included) run on
 * every store. Running them twice doubled CI's longest suites and tested no more of the store.
 */
const ONCE = [
  'test/cli/',
  'test/web/',
  'test/simulate/',
  'test/factories/',
  // The store suites open SQLite and PostgreSQL themselves, side by side in one process, whichever
  // store the pass is for: a second pass would run the same tests again.
  'test/conformance/stores.test.ts',
  'test/conformance/log-stores.test.ts',
  'test/store/migration-fixtures.test.ts',
];
const once = (f) => ONCE.some((dir) => f.split(sep).join('/').startsWith(dir));

const stores = process.env.BERTH_TEST_STORE ? [process.env.BERTH_TEST_STORE] : ['sqlite', 'postgres'];
let status = 0;
for (const [pass, store] of stores.entries()) {
  const these = pass === 0 ? files : files.filter((f) => !once(f));
  const skipped = files.length - these.length;
  const note = skipped
    ? ` (${skipped} file${skipped === 1 ? '' : 's'} of clients, outside systems and both stores ran in the ${stores[0]} pass)`
    : '';
  console.log(`\n== tests on ${store}${note}\n`);
  if (these.length === 0) continue;
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', ...these],
    {
      stdio: 'inherit',
      env: { ...process.env, BERTH_TEST: '1', BERTH_TEST_STORE: store, BERTH_TEST_RUN: RUN },
    },
  );
  if (store === 'postgres') await dropTestDatabases();
  if (result.status !== 0) {
    console.error(`\n== tests on ${store} failed`);
    status = result.status ?? 1;
  }
}
process.exit(status);
