#!/usr/bin/env node
// Runs the test suite with Node's own test runner, once per store: on SQLite and on PostgreSQL
// (127.0.0.1:5432, or $BERTH_TEST_PG_URL), side by side, as Kysely's tests loop over dialects.
// BERTH_TEST_STORE=sqlite or =postgres runs one. The TypeScript is compiled once for the run
// (scripts/build-tests.mjs); BERTH_TEST_BUILD=0 runs the sources through tsx instead.
// Usage: node scripts/test.mjs [path-substring ...]   e.g. `node scripts/test.mjs scheduler`
import { spawn, spawnSync } from 'node:child_process';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { dirname, join, resolve, sep } from 'node:path';
import pg from 'pg';
import { buildIsFresh } from './build-fresh.mjs';
import { buildTests } from './build-tests.mjs';

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return find(path);
    return name.endsWith('.test.ts') ? [path] : [];
  });
}

// --checks: also the type check, ESLint and Prettier (`npm run checks`), as one more run beside the
// tests (`npm test` asks for it): they are CPU work where the tests mostly wait.
const checks = process.argv.includes('--checks');
const filters = process.argv.slice(2).filter((a) => a !== '--checks');
const files = find('test')
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

// Tests that start `berth` as a process of its own run the build when it is up to date (a plain Node
// start, about half a second sooner than the sources through tsx: test/helpers/berth-command.ts).
// `npm ci` builds it; after a change to src/ it is built here, once, rather than in every test.
const startsBerth = (f) => /cli\.js'|server-process\.js'|berth-command\.js'/.test(readFileSync(f, 'utf8'));
if (files.some(startsBerth) && !buildIsFresh()) {
  const t0 = Date.now();
  const built = spawnSync(join('node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], {
    stdio: 'inherit',
  });
  console.log(
    built.status === 0
      ? `== built dist/ in ${((Date.now() - t0) / 1000).toFixed(1)} s (sources changed since the last build)`
      : '== the build failed: tests that start berth run the sources through tsx',
  );
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
  // It runs the confinement suites inside user-mode-linux on SQLite, whichever pass starts it.
  'test/security/uml.test.ts',
];

/**
 * Whether a test file's run depends on the store of the pass: whether its imports, followed through
 * the test folder, reach test/helpers/store.ts — the one module that reads BERTH_TEST_STORE and
 * picks the servers' store (or it reads the variable itself). A file that does not (the pure
 * suites: scheduler, domain, config; the wells; the in-process services on SQLite files of their
 * own) would run the same tests the same way in every pass, so it runs in the first only.
 */
const STORE_HELPER = resolve('test', 'helpers', 'store.ts');
const reachesStore = new Map();
function dependsOnStore(file) {
  const path = resolve(file);
  if (path === STORE_HELPER) return true;
  if (reachesStore.has(path)) return reachesStore.get(path);
  reachesStore.set(path, false); // an import cycle adds nothing
  const source = readFileSync(path, 'utf8');
  const imported = [...source.matchAll(/(?:\bfrom|\bimport\s*\(?)\s*'(\.{1,2}\/[^']+)'/g)]
    .map((m) => resolve(dirname(path), m[1]).replace(/\.js$/, '.ts'))
    .filter((p) => p.startsWith(resolve('test') + sep) && existsSync(p));
  const depends = source.includes('BERTH_TEST_STORE') || imported.some(dependsOnStore);
  reachesStore.set(path, depends);
  return depends;
}

const once = (f) => ONCE.some((dir) => f.split(sep).join('/').startsWith(dir)) || !dependsOnStore(f);

const stores = process.env.BERTH_TEST_STORE ? [process.env.BERTH_TEST_STORE] : ['sqlite', 'postgres'];

/**
 * The stores' passes run side by side (BERTH_TEST_PARALLEL=0: one after the other), each in two
 * halves (every other file), and in the first the files that use the Slurm cluster run apart from
 * the rest. On CI's two cores the runs keep both busy: what one run waits for (processes, servers,
 * jobs, slurmctld) another computes, and with halves no single run is left alone at the end while
 * the other core idles. The first prints as it goes; the others' output is kept and printed whole
 * once it has ended, so the log reads as if they had run in turn. What they share is kept apart:
 * each test makes its own data directory, database and uid range, and the Slurm cluster is held by
 * one test file at a time (test/helpers/slurm.ts).
 */
const parallel = process.env.BERTH_TEST_PARALLEL !== '0';
const usesSlurm = (f) => /helpers\/slurm\.js'/.test(readFileSync(f, 'utf8'));
/**
 * The file that boots user-mode-linux (a cgroup-v2 kernel) and runs the confinement suites inside
 * (BERTH_TEST_UML=1): a run of its own, from the start, beside the others — minutes of a kernel
 * that mostly waits on ptrace, which would otherwise end one half long after the rest.
 */
const bootsUml = (f) => f.split(sep).join('/') === 'test/security/uml.test.ts';

/** The runs to make: a label, a store, files. */
function plan() {
  const runs = [];
  for (const [pass, store] of stores.entries()) {
    const these = pass === 0 ? files : files.filter((f) => !once(f));
    const skipped = files.length - these.length;
    const note = skipped
      ? ` (${skipped} file${skipped === 1 ? '' : 's'} ran in the ${stores[0]} pass only)`
      : '';
    const tests = (label, list) =>
      list.length > 0 && runs.push({ label: `tests on ${label}`, store, argv: testArgv(list) });
    if (pass === 0 && parallel) {
      const rest = these.filter((f) => !usesSlurm(f) && !(process.env.BERTH_TEST_UML === '1' && bootsUml(f)));
      tests(
        `${store}${note}, first half`,
        rest.filter((_, i) => i % 2 === 0),
      );
      tests(
        `${store}, second half`,
        rest.filter((_, i) => i % 2 === 1),
      );
      tests(`${store}, the files that use Slurm`, these.filter(usesSlurm));
      if (process.env.BERTH_TEST_UML === '1')
        tests('a cgroup-v2 kernel (user-mode-linux)', these.filter(bootsUml));
    } else if (parallel) {
      // In two halves, every other file: once the first pass is split, a later one is the longest.
      tests(
        `${store}${note}, first half`,
        these.filter((_, i) => i % 2 === 0),
      );
      tests(
        `${store}, second half`,
        these.filter((_, i) => i % 2 === 1),
      );
    } else tests(`${store}${note}`, these);
  }
  // First when one after another: a type error is the first thing to read.
  if (checks)
    runs.splice(parallel ? 1 : 0, 0, {
      label: 'the type check and lint',
      argv: ['npm', 'run', '-s', 'checks'],
    });
  return runs;
}

/**
 * This run's own build of the sources (scripts/build-tests.mjs), removed when it ends: two runs in
 * one checkout (a developer's and an editor's) never run each other's half-written files.
 */
const BUILD = process.env.BERTH_TEST_BUILD === '0' ? undefined : resolve('build', `test-run-${RUN}`);
if (BUILD) {
  const t0 = Date.now();
  const count = await buildTests(process.cwd(), BUILD);
  console.log(
    `== compiled ${count} TypeScript files for this run in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
])
  process.once(signal, () => {
    if (BUILD) rmSync(BUILD, { recursive: true, force: true });
    process.exit(code);
  });
const built = (f) => join(BUILD, f.replace(/\.ts$/, '.js'));

/**
 * Files run several to a process, in groups of up to GROUP files of one folder (BERTH_TEST_GROUP;
 * 1: a process each). Node's runner starts a process per file and, on two cores, runs one at a time
 * (its concurrency is the cores less one), so a group changes no test's order or company — only
 * that the modules a file imports (the whole server, for most) are loaded once per group, not once
 * per file: about a CPU-second a file, and CI's runs share two cores. Each file's tests and hooks
 * stay its own: the group imports it inside a suite named for it, which holds its top-level tests
 * and its before/after hooks. A file that uses the Slurm cluster runs alone, since it holds the
 * cluster until its process exits (test/helpers/slurm.ts).
 */
const GROUP = Math.max(1, Number(process.env.BERTH_TEST_GROUP ?? 8));
let groupCount = 0;

const folder = (f) => f.slice(0, f.lastIndexOf(sep));

/** The files to give Node's runner: a file alone, or a group's entry (written under BUILD/groups). */
function entries(list) {
  const groups = [];
  for (const f of list) {
    const last = groups.at(-1);
    if (usesSlurm(f) || !last || last.length >= GROUP || usesSlurm(last[0]) || folder(last[0]) !== folder(f))
      groups.push([f]);
    else last.push(f);
  }
  return groups.map((group) => {
    if (group.length === 1) return built(group[0]);
    const entry = join(BUILD, 'groups', `${String(++groupCount).padStart(3, '0')}.test.js`);
    const suites = group.map(
      (f) =>
        `describe(${JSON.stringify(f.split(sep).join('/'))}, async () => {\n` +
        `  await import(${JSON.stringify(pathToFileURL(built(f)).href)});\n});\n`,
    );
    mkdirSync(join(BUILD, 'groups'), { recursive: true });
    writeFileSync(entry, `import { describe } from 'node:test';\n${suites.join('')}`);
    return entry;
  });
}

const testArgv = (list) =>
  BUILD
    ? [process.execPath, '--enable-source-maps', '--test', '--test-reporter=spec', ...entries(list)]
    : [process.execPath, '--import', 'tsx', '--test', '--test-reporter=spec', ...list];

function run({ label, store, argv }, live) {
  const heading = `\n== ${label}\n`;
  if (live) console.log(heading);
  const t0 = Date.now();
  // A live run's output is shown as it comes and kept too: its failures are repeated at the end.
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      BERTH_TEST: '1',
      ...(store ? { BERTH_TEST_STORE: store } : {}),
      BERTH_TEST_RUN: RUN,
    },
  });
  const chunks = [];
  const keep = (to) => (d) => {
    chunks.push(d);
    if (live) to.write(d);
  };
  child.stdout.on('data', keep(process.stdout));
  child.stderr.on('data', keep(process.stderr));
  return new Promise((resolve) =>
    child.on('close', (code, signal) =>
      resolve({
        label,
        status: code ?? (signal ? 1 : 0),
        heading: live ? '' : heading,
        output: Buffer.concat(chunks).toString(),
        seconds: ((Date.now() - t0) / 1000).toFixed(0),
      }),
    ),
  );
}

const runs = plan();
const results = [];
if (parallel) results.push(...(await Promise.all(runs.map((r, i) => run(r, i === 0)))));
else for (const r of runs) results.push(await run(r, true));
// Once every run has ended: the first pass uses PostgreSQL too (the store and well suites).
await dropTestDatabases().catch(() => {});
if (BUILD) rmSync(BUILD, { recursive: true, force: true });
let status = 0;
for (const r of results) {
  if (r.heading) console.log(r.heading);
  if (r.output && r.heading) process.stdout.write(r.output);
  if (r.status !== 0) status = r.status;
}
// A failed run's own list of failures again, last, beside the summary: printed whole in the middle
// of the log, a run's failures are otherwise far above the end of a long CI log, where one looks.
for (const r of results) {
  const at = r.status === 0 ? -1 : r.output.lastIndexOf('\u2716 failing tests:');
  if (at < 0) continue;
  const lines = r.output.slice(at).split('\n');
  console.log(`\n== the failures of ${r.label}, again\n`);
  console.log(
    lines.slice(0, 150).join('\n') + (lines.length > 150 ? `\n… ${lines.length - 150} more lines above` : ''),
  );
}
for (const r of results)
  console.log(`== ${r.label}: ${r.status === 0 ? 'passed' : 'FAILED'} in ${r.seconds} s`);
process.exit(status);
