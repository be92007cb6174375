/**
 * Usage accounting end to end, on the local factory with real processes over real HTTP, on the
 * suite's store: every allocation a job held is one ledger row (succeeded, failed, retried,
 * evicted and requeued, a gang, a job cancelled while queued), and `GET /usage` answers from the
 * rollups with the right counts, resource·hours equal to requests × held time, by project, user
 * and queue; members see only their projects; bad parameters are 400 saying why. Then a server
 * killed with kill -9 while a job runs: after the restart the ledger has exactly one row per
 * allocation, no gap and no double count.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { UsageReport, UsageRow } from '../../src/domain/usage.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { listAllocations } from '../../src/store/queries/usage.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { storeOf } from '../helpers/db.js';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { serverDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { OBJECT_MEMBERS } from '../../src/domain/names.js';
import { countedRuns, runsOf, scratchDir, sharedFile } from '../helpers/scratch.js';

interface ErrorBody {
  error: { code: string; message: string };
}

interface Timed extends JobView {
  admittedAt: string | null;
  attempts: number;
}

const HOUR = 3_600_000;
const MI = 2 ** 20;

let s: TestServer;
let scratch: string;
let alice: string;
let bob: string;

before(async () => {
  scratch = scratchDir('berth-usage-');
  s = await startTestServer({ config: localFactoryConfig(4) });
  const admin = async (method: string, path: string, body?: unknown) => {
    const r = await call<{ token: string }>(s.api, s.adminToken, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  await admin('POST', '/cluster-queues', { name: 'dq', quota: { cpu: '1', jobs: 4 } });
  await admin('POST', '/cluster-queues', { name: 'held', quota: { cpu: '1' }, stopPolicy: 'Hold' });
  for (const [name, queue] of [
    ['ml', 'default'],
    ['drainable', 'dq'],
    ['parked', 'held'],
    ['side', 'default'],
  ])
    await admin('POST', '/projects', { name, clusterQueue: queue });
  alice = (await admin('POST', '/users', { name: 'alice' })).token;
  bob = (await admin('POST', '/users', { name: 'bob' })).token;
  await admin('PUT', '/projects/ml/members/alice', { role: 'member' });
  await admin('PUT', '/projects/side/members/bob', { role: 'member' });
});
after(async () => {
  await s?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const usage = async (query: string, token = s.adminToken) =>
  call<UsageReport & ErrorBody>(s.api, token, 'GET', `/usage${query}`);
const report = async (query: string, token = s.adminToken): Promise<UsageReport> => {
  const r = await usage(query, token);
  assert.equal(r.status, 200, r.text);
  return r.body;
};
const rowOf = (r: UsageReport, key: string): UsageRow => {
  const row = r.rows.find((x) => x.key === key);
  assert.ok(row, `no row ${key} in ${JSON.stringify(r.rows.map((x) => x.key))}`);
  return row;
};
/** A script that counts its runs in `name`, and does `then` with `$n` its run. */
const counted = (name: string, then: string): string => countedRuns(scratch, name, then);
const close = (actual: number, expected: number, what: string) =>
  assert.ok(
    Math.abs(actual - expected) <= Math.abs(expected) * 1e-9 + 1e-12,
    `${what}: ${actual}, expected ${expected}`,
  );

describe('names every object has (issue #40)', () => {
  it("refuses them as a member's request names and a queue's quota, saying why; every report still answers", async () => {
    for (const name of OBJECT_MEMBERS) {
      const job = await call<ErrorBody>(s.api, alice, 'POST', '/projects/ml/jobs', {
        command: ['true'],
        requests: { [name]: '1' },
      });
      assert.equal(job.status, 400, `${name}: ${job.text}`);
      // __proto__ never reaches the rule: the body's parser refuses it in any object first.
      const why = name === '__proto__' ? /a key "__proto__"/ : /not a name every JavaScript object has/;
      assert.match(job.body.error.message, why, name);
      const queue = await call<ErrorBody>(s.api, s.adminToken, 'POST', '/cluster-queues', {
        name: 'protoq',
        quota: { [name]: '1' },
      });
      assert.equal(queue.status, 400, `${name}: ${queue.text}`);
      assert.match(queue.body.error.message, why, name);
    }
    // A request whose JSON names __proto__ as a key of its own, as a hand-written client sends it.
    const raw = await fetch(`${s.api}/projects/ml/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: '{"command":["true"],"requests":{"__proto__":"1","cpu":"1"}}',
    });
    assert.equal(raw.status, 400, await raw.text());
    for (const by of ['project', 'user', 'queue']) await report(`?by=${by}`);
    await report('', alice);
  });
});

describe('usage accounting', () => {
  /** Per job: cpu cores and memory bytes per worker, and its workers. */
  const asked = new Map<number, { cores: number; memory: number; workers: number }>();
  const ids: Record<string, number> = {};

  it('writes a ledger row for every allocation: success, failure, retry, eviction, gang, cancel while queued', async () => {
    const run = async (
      key: string,
      token: string,
      project: string,
      body: Record<string, unknown>,
      shape: { cores: number; memory?: number; workers?: number },
    ) => {
      const j = await submit(s.api, token, project, body);
      ids[key] = j.id;
      asked.set(j.id, { memory: 0, workers: 1, ...shape });
      return j;
    };
    await run(
      'ok',
      alice,
      'ml',
      { script: 'sleep 0.2', requests: { cpu: '500m', memory: '64Mi' } },
      { cores: 0.5, memory: 64 * MI },
    );
    await run('fail', alice, 'ml', { script: 'exit 3', requests: { cpu: '250m' } }, { cores: 0.25 });
    await run(
      'retry',
      alice,
      'ml',
      {
        script: counted('retry', '[ $n -ge 2 ] || exit 7'),
        requests: { cpu: '500m' },
        retries: 1,
        retryBackoffSeconds: 0.2,
      },
      { cores: 0.5 },
    );
    await run(
      'gang',
      s.adminToken,
      'ml',
      { script: 'sleep 0.1', requests: { cpu: '250m' }, workers: 2 },
      { cores: 0.25, workers: 2 },
    );
    const drained = await run(
      'drained',
      s.adminToken,
      'drainable',
      { script: counted('drained', '[ $n -ge 2 ] || sleep 300'), requests: { cpu: '500m' } },
      { cores: 0.5 },
    );
    const parked = await run('parked', s.adminToken, 'parked', { script: 'true' }, { cores: 0 });

    // Evicted while it runs (its queue drained), then run again to success.
    // Its script must have counted its first run before the drain, or the second would sleep.
    await waitFor('the drained job to count its first run', () => runsOf(scratch, 'drained') === 1);
    await call(s.api, s.adminToken, 'PATCH', '/cluster-queues/dq', { stopPolicy: 'HoldAndDrain' });
    await waitFor('the drained job to be requeued', async () => {
      const j = (await getJob(s.api, s.adminToken, drained.id)) as Timed;
      return j.state === 'queued' && j.attempts === 1;
    });
    await call(s.api, s.adminToken, 'PATCH', '/cluster-queues/dq', { stopPolicy: 'None' });
    // Cancelled while queued: never admitted.
    assert.equal((await call(s.api, s.adminToken, 'POST', `/jobs/${parked.id}/cancel`)).status, 200);

    const states: Record<string, string> = {};
    for (const [key, id] of Object.entries(ids))
      states[key] = (await waitDone(s.api, s.adminToken, id)).state;
    assert.deepEqual(states, {
      ok: 'succeeded',
      fail: 'failed',
      retry: 'succeeded',
      gang: 'succeeded',
      drained: 'succeeded',
      parked: 'cancelled',
    });

    const ledger = (await listAllocations(storeOf(s).db)).sort(
      (a, b) => a.jobId - b.jobId || a.attempt - b.attempt,
    );
    assert.deepEqual(
      ledger.map((a) => [a.jobId, a.attempt, a.outcome, a.final, a.admittedAt !== null]),
      [
        [ids.ok, 1, 'succeeded', true, true],
        [ids.fail, 1, 'failed', true, true],
        [ids.retry, 1, 'retried', false, true],
        [ids.retry, 2, 'succeeded', true, true],
        [ids.gang, 1, 'succeeded', true, true],
        [ids.drained, 1, 'requeued', false, true],
        [ids.drained, 2, 'succeeded', true, true],
        [ids.parked, 1, 'cancelled', true, false],
      ],
    );

    // Names, requests and times as the job shows them.
    const byJob = (id: number) => ledger.filter((a) => a.jobId === id);
    for (const key of ['ok', 'fail', 'gang']) {
      const job = (await getJob(s.api, s.adminToken, ids[key]!)) as Timed;
      const [row] = byJob(job.id);
      assert.equal(row!.admittedAt, Date.parse(job.admittedAt!), key);
      assert.equal(row!.endedAt, Date.parse(job.finishedAt!), key);
      assert.equal(row!.startedAt, Date.parse(job.startedAt!), key);
      assert.equal(row!.workerId, job.worker?.id ?? null, key);
    }
    const [ok] = byJob(ids.ok!);
    assert.deepEqual(
      [ok!.project, ok!.user, ok!.queue, ok!.target, ok!.workers, ok!.requests],
      ['ml', 'alice', 'default', 'local', 1, { cpu: '500m', memory: '64Mi' }],
    );
    assert.equal(byJob(ids.gang!)[0]!.workers, 2);
    // A retry is queued again at the end of its backoff, timed from the attempt's end (0.2 s,
    // jittered down to half); an evicted job at once.
    const [tried, retried] = byJob(ids.retry!);
    const backoff = retried!.queuedAt - tried!.endedAt;
    assert.ok(backoff >= 100 && backoff <= 200, `queued ${backoff} ms after the attempt ended`);
    assert.ok(retried!.admittedAt! >= retried!.queuedAt);
    const [evicted, rerun] = byJob(ids.drained!);
    assert.equal(rerun!.queuedAt, evicted!.endedAt);
    assert.equal(byJob(ids.parked!)[0]!.queue, 'held');
  });

  it('reports counts, waits and resource·hours per project from the rollups', async () => {
    const ledger = await listAllocations(storeOf(s).db);
    const r = await report('?since=1d');
    assert.equal(r.by, 'project');
    assert.match(r.since, /T\d\d:00:00\.000Z$/);
    assert.match(r.until, /T\d\d:00:00\.000Z$/);
    assert.ok(Date.parse(r.until) >= Date.now() && Date.parse(r.since) <= Date.now() - 24 * HOUR);
    assert.deepEqual(r.resources, ['cpu', 'memory']);
    assert.deepEqual(
      r.rows.map((x) => x.key),
      ['drainable', 'ml', 'parked'],
    );
    const ml = rowOf(r, 'ml');
    assert.deepEqual(
      [ml.jobs, ml.allocations, ml.requeued, ml.retried],
      [{ succeeded: 3, failed: 1, cancelled: 0 }, 5, 0, 1],
    );
    const drainable = rowOf(r, 'drainable');
    assert.deepEqual(
      [drainable.jobs, drainable.allocations, drainable.requeued, drainable.retried],
      [{ succeeded: 1, failed: 0, cancelled: 0 }, 2, 1, 0],
    );
    const parked = rowOf(r, 'parked');
    assert.deepEqual(
      [parked.jobs, parked.allocations, parked.allocationHours, parked.waitSeconds],
      [{ succeeded: 0, failed: 0, cancelled: 1 }, 0, 0, { mean: 0, max: 0 }],
    );

    // requests × workers × held time, worked out here from each row's times.
    for (const key of ['ml', 'drainable']) {
      const rows = ledger.filter((a) => a.project === key && a.admittedAt !== null);
      const held = (a: (typeof rows)[number]) => a.endedAt - a.admittedAt!;
      const cores = rows.reduce((sum, a) => {
        const q = asked.get(a.jobId)!;
        return sum + (q.cores * q.workers * held(a)) / HOUR;
      }, 0);
      const bytes = rows.reduce((sum, a) => sum + (asked.get(a.jobId)!.memory * held(a)) / HOUR, 0);
      const row = rowOf(r, key);
      close(row.resourceHours.cpu!, cores, `${key} cpu`);
      close(row.resourceHours.memory!, bytes, `${key} memory`);
      close(row.allocationHours, rows.reduce((sum, a) => sum + held(a), 0) / HOUR, `${key} hours`);
      const waits = rows.map((a) => a.admittedAt! - a.queuedAt);
      close(row.waitSeconds.mean, waits.reduce((x, y) => x + y, 0) / waits.length / 1000, `${key} wait`);
      close(row.waitSeconds.max, Math.max(...waits) / 1000, `${key} max wait`);
    }
    assert.ok(rowOf(r, 'ml').resourceHours.cpu! > 0);

    const t = r.totals;
    assert.equal(t.key, '');
    assert.deepEqual(t.jobs, { succeeded: 4, failed: 1, cancelled: 1 });
    assert.equal(t.allocations, 7);
    close(t.resourceHours.cpu!, ml.resourceHours.cpu! + drainable.resourceHours.cpu!, 'total cpu');
  });

  it('groups by user and by queue', async () => {
    const byUser = await report('?since=1d&by=user');
    assert.equal(byUser.by, 'user');
    assert.deepEqual(
      byUser.rows.map((x) => [x.key, x.jobs, x.allocations, x.retried, x.requeued]),
      [
        ['admin', { succeeded: 2, failed: 0, cancelled: 1 }, 3, 0, 1],
        ['alice', { succeeded: 2, failed: 1, cancelled: 0 }, 4, 1, 0],
      ],
    );
    const byQueue = await report('?since=1d&by=queue');
    assert.deepEqual(
      byQueue.rows.map((x) => [x.key, x.jobs, x.allocations]),
      [
        ['default', { succeeded: 3, failed: 1, cancelled: 0 }, 5],
        ['dq', { succeeded: 1, failed: 0, cancelled: 0 }, 2],
        ['held', { succeeded: 0, failed: 0, cancelled: 1 }, 0],
      ],
    );
    close(byUser.totals.resourceHours.cpu!, byQueue.totals.resourceHours.cpu!, 'the same total');
    // One project's users.
    const mlUsers = await report('?since=1d&by=user&project=ml');
    assert.deepEqual(
      mlUsers.rows.map((x) => [x.key, x.allocations]),
      [
        ['admin', 1],
        ['alice', 4],
      ],
    );
    // Whole days are read from the daily rollups: the same figures.
    const hourly = await report('?since=1d');
    const daily = await report('?since=2020-01-01T00:00:00Z&until=2100-01-01T00:00:00Z');
    assert.deepEqual(
      daily.rows.map((x) => [x.key, x.jobs, x.allocations, x.requeued, x.retried]),
      hourly.rows.map((x) => [x.key, x.jobs, x.allocations, x.requeued, x.retried]),
    );
    for (const [i, x] of daily.rows.entries()) {
      const y = hourly.rows[i]!;
      close(x.allocationHours, y.allocationHours, `${x.key} hours`);
      close(x.waitSeconds.mean, y.waitSeconds.mean, `${x.key} wait`);
      for (const name of daily.resources)
        close(x.resourceHours[name]!, y.resourceHours[name]!, `${x.key} ${name}`);
    }
    // A period before any of it: nothing.
    const old = await report('?since=2020-01-01T00:00:00Z&until=2020-01-02T00:00:00Z');
    assert.deepEqual([old.rows, old.totals.allocations], [[], 0]);
  });

  it("shows members only their projects' usage, and another project not at all", async () => {
    const mine = await report('?since=1d', alice);
    assert.deepEqual(
      mine.rows.map((x) => x.key),
      ['ml'],
    );
    assert.deepEqual(
      (await report('?since=1d&by=user', alice)).rows.map((x) => x.key),
      ['admin', 'alice'],
    );
    const none = await report('?since=1d', bob);
    assert.deepEqual([none.rows, none.totals.allocations, none.resources], [[], 0, []]);
    for (const [token, project] of [
      [bob, 'ml'],
      [alice, 'parked'],
      [alice, 'nowhere'],
    ] as const) {
      const r = await usage(`?project=${project}`, token);
      assert.equal(r.status, 404, r.text);
      assert.match(r.body.error.message, new RegExp(`project "${project}" not found`));
    }
    assert.equal((await report('?project=ml', alice)).rows.length, 1);
    assert.equal((await call(s.api, undefined, 'GET', '/usage')).status, 401);

    // A job's own token reaches its job only.
    const file = join(scratch, 'job-token');
    const job = await submit(s.api, s.adminToken, 'side', {
      script: `echo "$BERTH_TOKEN" > ${file}.part && mv ${file}.part ${file}; sleep 300`,
    });
    const jobToken = await waitFor('the job to write its token', () => {
      try {
        return readFileSync(file, 'utf8').trim() || undefined;
      } catch {
        return undefined;
      }
    });
    const refused = await usage('', jobToken);
    assert.equal(refused.status, 403, refused.text);
    assert.match(refused.body.error.message, /a job token can only read its own job/);
    await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'cancelled');
  });

  it('refuses bad parameters with 400 saying why', async () => {
    const cases: [string, RegExp][] = [
      ['?since=soon', /since: "soon" is not a time: write an ISO 8601 time .* or a span back from now/],
      ['?until=2026-13-45', /until: "2026-13-45" is not a time/],
      // A span that parses but reaches past the dates a Date can hold (was a 500: RangeError).
      ['?since=9999999999999h', /since: "9999999999999h" is out of range/],
      ['?since=1h&until=2h', /since \(.*\) must be before until/],
      ['?by=team', /query field "by" must be one of project, user, queue/],
      ['?colour=red', /unknown field "colour"/],
    ];
    for (const [query, message] of cases) {
      const r = await usage(query);
      assert.equal(r.status, 400, `${query}: ${r.text}`);
      assert.equal(r.body.error.code, 'bad_request');
      assert.match(r.body.error.message, message, query);
    }
  });
});

describe('usage across kill -9', () => {
  const dir = scratchDir('berth-usage-crash-');
  const dataDir = join(dir, 'data');
  const runs = join(dir, 'runs');
  let server: ServerProcess | undefined;

  after(async () => {
    if (server) await killHard(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps exactly one ledger row per allocation after a restart: no gap, no double count', async () => {
    sharedFile(runs);
    server = await spawnServer(dataDir);
    const { api, token } = server;
    const done = await submit(api, token, 'default', { script: 'true', requests: { cpu: '250m' } });
    assert.equal((await waitDone(api, token, done.id)).state, 'succeeded');
    // Its first run waits to be killed with the server; its second, after the restart, ends.
    const lost = await submit(api, token, 'default', {
      script: `echo run >> ${runs}; [ $(grep -c run ${runs}) -ge 2 ] || sleep 300`,
      requests: { cpu: '250m' },
      infraRetries: 1,
      retryBackoffSeconds: 0,
    });
    // Its command runs (not only its worker): a kill before its first line would leave no run to count.
    await waitFor('the second job to run', () => readFileSync(runs, 'utf8') === 'run\n');
    const before = (await call<UsageReport>(api, token, 'GET', '/usage?since=1d')).body;
    assert.deepEqual([before.totals.jobs.succeeded, before.totals.allocations], [1, 1]);

    await killHard(server);
    server = undefined;
    server = await spawnServer(dataDir);
    const ended = await waitDone(server.api, server.token, lost.id);
    assert.equal(ended.state, 'succeeded', ended.reason);
    assert.equal(readFileSync(runs, 'utf8'), 'run\nrun\n');

    const after = (await call<UsageReport>(server.api, server.token, 'GET', '/usage?since=1d')).body;
    assert.deepEqual(
      [after.totals.jobs, after.totals.allocations, after.totals.retried, after.totals.requeued],
      [{ succeeded: 2, failed: 0, cancelled: 0 }, 3, 1, 0],
    );
    const database = await serverDatabase(dataDir);
    const store = database
      ? await openPostgresStore(database.url)
      : await openSqliteStore(join(dataDir, 'berth.db'));
    try {
      const ledger = await listAllocations(store.db);
      assert.deepEqual(
        ledger.map((a) => [a.jobId, a.attempt, a.outcome, a.final]),
        [
          [done.id, 1, 'succeeded', true],
          [lost.id, 1, 'retried', false],
          [lost.id, 2, 'succeeded', true],
        ],
      );
      // The lost run is charged until the restart that found it gone.
      const [killed] = ledger.filter((a) => a.jobId === lost.id);
      assert.ok(killed!.admittedAt !== null && killed!.startedAt !== null);
      close(
        after.totals.resourceHours.cpu!,
        ledger.reduce((sum, a) => sum + (0.25 * (a.endedAt - a.admittedAt!)) / HOUR, 0),
        'cpu',
      );
    } finally {
      await store.close();
    }
  });
});
