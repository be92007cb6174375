/**
 * `berth store copy`: an installation that ran on SQLite — users, tokens, projects, queues,
 * priority classes, finished and waiting jobs with their logs and timelines, resource records —
 * goes on from PostgreSQL as if nothing had happened. The CLI runs as a real process.
 *
 * Runs in the SQLite pass only: its source is SQLite by nature, and its target a PostgreSQL
 * database of its own, whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startServer, type RunningServer } from '../../src/server/run.js';
import { berth, sandbox, type Sandbox } from '../cli/cli.js';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { countedRuns, scratchDir } from '../helpers/scratch.js';

const CONFIG = [
  'graceSeconds: 1',
  'factories:',
  '  local: { kind: local, capacity: 2 }',
  'targets:',
  '  local: { factory: local }',
  'resources:',
  '  licence: { kind: semaphore, capacity: 1 }',
].join('\n');

describe('berth store copy', { skip: TEST_STORE !== 'sqlite' && 'runs in the SQLite pass' }, () => {
  const dir = scratchDir('berth-copy-');
  const dataDir = join(dir, 'data');
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, CONFIG);
  let sb: Sandbox;
  let target: TestDatabase;
  let admin: string;
  let alice: string;
  const jobs: Record<string, JobView> = {};
  const logs: Record<string, string> = {};

  const start = (database: string) =>
    startServer({ dataDir, configFile, database, listen: '127.0.0.1:0', print: () => {} });

  before(async () => {
    sb = sandbox();
    target = await createTestDatabase();
    // A SQLite installation with a little of everything.
    const s = await start('sqlite');
    try {
      const api = `${s.url}/api/v1`;
      admin = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
      const ok = async (method: string, path: string, body?: unknown) => {
        const r = await call(api, admin, method, path, body);
        assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
        return r.body as Record<string, unknown>;
      };
      alice = (await ok('POST', '/users', { name: 'alice' })).token as string;
      await ok('POST', '/cluster-queues', { name: 'q', quota: { cpu: '4' } });
      await ok('POST', '/cluster-queues', { name: 'held', quota: { cpu: '4' }, stopPolicy: 'Hold' });
      await ok('POST', '/projects', { name: 'p', clusterQueue: 'q', tags: ['t1'] });
      await ok('POST', '/projects', { name: 'h', clusterQueue: 'held' });
      await ok('PUT', '/projects/p/members/alice', { role: 'member' });
      await ok('POST', '/priority-classes', { name: 'urgent', value: 100 });
      jobs.ok = await submit(api, alice, 'p', { script: 'echo first line; echo second line' });
      jobs.fail = await submit(api, alice, 'p', { script: 'echo doomed >&2; exit 7', priority: 'urgent' });
      jobs.licensed = await submit(api, admin, 'p', {
        command: ['echo', 'with a licence'],
        resources: ['licence'],
      });
      // Retried once: its attempts' ends in the log are byte offsets here, row ids there.
      jobs.retried = await submit(api, alice, 'p', {
        script: countedRuns(dir, 'retry-count', `echo "run $n"; [ $n -ge 2 ]`),
        retries: 1,
        retryBackoffSeconds: 0,
      });
      for (const name of ['ok', 'fail', 'licensed', 'retried']) await waitDone(api, admin, jobs[name]!.id);
      jobs.waiting = await submit(api, admin, 'h', { command: ['echo', 'after the move'] });
      for (const [name, j] of Object.entries(jobs))
        logs[name] = (await call(api, admin, 'GET', `/jobs/${j.id}/logs`)).text;
      for (const [name, j] of Object.entries(jobs)) jobs[name] = await getJob(api, admin, j.id);
      // What the retention sweep leaves of jobs it removed (a range of ids), as if it had run.
      const ended = Date.parse('2026-01-02T03:00:00Z');
      await s.context.store.db
        .insertInto('removed_jobs')
        .values({
          first_id: 900,
          last_id: 950,
          ended_from: ended,
          ended_to: ended,
          retention_seconds: 7_776_000,
          removed_at: ended,
        })
        .execute();
    } finally {
      await s.close();
    }
  });

  after(async () => {
    await target?.drop();
    sb?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('copies everything into an empty PostgreSQL database and says what it copied', async () => {
    const r = await berth(sb, ['store', 'copy', '--data-dir', dataDir, '--to', target.url]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}users: 2$/m);
    assert.match(r.stdout, /^ {2}jobs: 5$/m);
    assert.match(r.stdout, /^ {2}job_attempts: 1$/m);
    assert.match(r.stdout, /^ {2}usage_ledger: 5$/m);
    assert.match(r.stdout, /^ {2}resource_instances: 1$/m);
    assert.match(r.stdout, /^ {2}job logs: 4 jobs, \d+ bytes$/m);
    assert.doesNotMatch(r.stdout, /password/);
  });

  it('refuses a target that is not empty, changing nothing', async () => {
    const r = await berth(sb, ['store', 'copy', '--data-dir', dataDir, '--to', target.url]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^berth: the target database is not empty \(it has users, cluster_queues, projects, jobs, events\)/,
    );
    assert.equal(r.stderr.trim().split('\n').length, 1, 'one line');
  });

  it('lets the installation go on from PostgreSQL: same jobs, logs, timelines, tokens and counts', async () => {
    const s: RunningServer = await start(target.url);
    try {
      const api = `${s.url}/api/v1`;
      for (const [name, before] of Object.entries(jobs)) {
        const now = await getJob(api, admin, before.id);
        const keep = (j: JobView) => [j.state, j.exitCode, j.cleanedUp, j.startedAt, j.finishedAt];
        assert.deepEqual(keep(now), keep(before), `job ${name}`);
        assert.equal(
          (await call(api, admin, 'GET', `/jobs/${before.id}/logs`)).text,
          logs[name],
          `log of ${name}`,
        );
      }
      assert.match(logs.ok!, /first line\nsecond line/);
      assert.equal(logs.retried, 'run 1\nrun 2\n');
      for (const k of [1, 2])
        assert.equal(
          (await call(api, admin, 'GET', `/jobs/${jobs.retried!.id}/logs?attempt=${k}`)).text,
          `run ${k}\n`,
          `attempt ${k} of the retried job`,
        );
      const removed = await call<{ error: { message: string } }>(api, admin, 'GET', '/jobs/920');
      assert.equal(removed.body.error.message, 'job 920 ended on 2026-01-02 and was removed after 90 days');
      const events = (await call<{ type: string }[]>(api, admin, 'GET', `/jobs/${jobs.fail!.id}/events`))
        .body;
      assert.deepEqual(
        events.map((e) => e.type),
        ['submitted', 'admitted', 'worker-creating', 'started', 'failed'],
      );
      // Tokens were copied as hashes and still work, with their user's rights.
      const me = await call<{ name: string }>(api, alice, 'GET', '/whoami');
      assert.equal(me.body.name, 'alice');
      assert.equal((await call(api, alice, 'GET', '/projects/h')).status, 404, 'alice is no member of h');
      const p = await call<{ jobCounts: Record<string, number>; tags: string[] }>(
        api,
        admin,
        'GET',
        '/projects/p',
      );
      assert.deepEqual(p.body.tags, ['t1']);
      assert.deepEqual(
        [p.body.jobCounts.succeeded, p.body.jobCounts.failed, p.body.jobCounts.queued],
        [3, 1, 0],
        'counts rebuilt by the triggers',
      );
      // The usage ledger's rollups came along.
      const usage = await call<{ totals: { jobs: unknown; allocations: number; retried: number } }>(
        api,
        admin,
        'GET',
        '/usage?since=1d',
      );
      assert.deepEqual(
        [usage.body.totals.jobs, usage.body.totals.allocations, usage.body.totals.retried],
        [{ succeeded: 3, failed: 1, cancelled: 0 }, 5, 1],
      );
      // The waiting job carries on once its queue is released; new jobs get new ids.
      assert.equal(
        (await call(api, admin, 'PATCH', '/cluster-queues/held', { stopPolicy: 'None' })).status,
        200,
      );
      assert.equal((await waitDone(api, admin, jobs.waiting!.id)).state, 'succeeded');
      const fresh = await submit(api, admin, 'p', { command: ['true'] });
      assert.ok(fresh.id > Math.max(...Object.values(jobs).map((j) => j.id)), `new id ${fresh.id}`);
      await waitFor(
        'the new job to succeed',
        async () => (await getJob(api, admin, fresh.id)).state === 'succeeded',
      );
    } finally {
      await s.close();
    }
  });

  it('refuses while a server uses the data directory', async () => {
    const s = await start('sqlite');
    try {
      const other = await createTestDatabase();
      try {
        const r = await berth(sb, ['store', 'copy', '--data-dir', dataDir, '--to', other.url]);
        assert.equal(r.code, 1);
        assert.match(r.stderr, /^berth: a server \(pid \d+, http:\S+\) uses .*: stop it first\n$/);
      } finally {
        await other.drop();
      }
    } finally {
      await s.close();
    }
  });

  it('says which option is wrong', async () => {
    const missing = await berth(sb, ['store', 'copy', '--data-dir', dataDir]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required option '--to <url>'/);
    const bad = await berth(sb, ['store', 'copy', '--data-dir', dataDir, '--to', 'mysql://x/y']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /--to must be a postgres:\/\/ URL/);
    const none = await berth(sb, ['store', 'copy', '--data-dir', join(dir, 'nothing'), '--to', target.url]);
    assert.match(none.stderr, /no SQLite store in .*nothing/);
  });
});
