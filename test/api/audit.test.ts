/**
 * The audit log through a real server: a row per change made through the API, with who made it
 * (a user, or a job through its job token), from which address, what and when; submissions
 * audited in bulk; admins only; filters and paging; never a secret; and after a kill -9, every
 * change that survived has its row and no row outlives its change.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { hashToken } from '../../src/domain/tokens.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import {
  call,
  localFactoryConfig,
  useTestServer,
  type ApiResponse,
  type TestServer,
} from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

interface Entry {
  id: number;
  at: string;
  actor: string;
  actorKind: string;
  address: string | null;
  action: string;
  subject: string;
  project: string | null;
  detail?: Record<string, unknown>;
}

/** Every entry matching `query`, page by page (newest first), following X-Next-Cursor. */
async function readAll(
  s: Pick<TestServer, 'api'>,
  token: string,
  query: Record<string, string> = {},
  limit = 1000,
): Promise<Entry[]> {
  const out: Entry[] = [];
  let cursor: string | null = null;
  do {
    const qs: URLSearchParams = new URLSearchParams({
      ...query,
      limit: String(limit),
      ...(cursor ? { cursor } : {}),
    });
    const r: ApiResponse<Entry[]> = await call<Entry[]>(s.api, token, 'GET', `/audit?${qs.toString()}`);
    assert.equal(r.status, 200, r.text);
    out.push(...r.body);
    cursor = r.headers.get('x-next-cursor');
  } while (cursor);
  return out;
}

async function ok<T>(s: TestServer, token: string, method: string, path: string, body?: unknown): Promise<T> {
  const r = await call<T>(s.api, token, method, path, body);
  assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
}

describe('the audit log', () => {
  const server = useTestServer({ config: localFactoryConfig() });
  const secrets: string[] = [];

  it('records every change through the API with who, what, when and from where', async () => {
    const s = server();
    const t0 = Date.now();
    const admin = s.adminToken;
    secrets.push(admin);
    const carol = await ok<{ token: string }>(s, admin, 'POST', '/users', { name: 'carol' });
    secrets.push(carol.token);
    const extra = await ok<{ id: string; token: string }>(s, carol.token, 'POST', '/users/carol/tokens', {
      label: 'ci',
      expiresIn: '7d',
    });
    secrets.push(extra.token);
    await ok(s, admin, 'POST', '/cluster-queues', { name: 'held', quota: { cpu: '4' } });
    await ok(s, admin, 'PATCH', '/cluster-queues/held', { stopPolicy: 'Hold' });
    await ok(s, admin, 'POST', '/projects', { name: 'web', clusterQueue: 'held' });
    await ok(s, admin, 'PATCH', '/projects/web', { description: 'the web team' });
    await ok(s, admin, 'PUT', '/projects/web/members/carol', { role: 'member' });
    await ok(s, admin, 'PUT', '/projects/web/privileges/target.gpu');
    await ok(s, admin, 'DELETE', '/projects/web/privileges/target.gpu');
    await ok(s, admin, 'POST', '/priority-classes', { name: 'urgent', value: 100 });
    await ok(s, admin, 'DELETE', '/priority-classes/urgent');
    const job = await submit(s.api, carol.token, 'web', {
      command: ['true'],
      env: { API_KEY: 's3cr3t-env-value' },
    });
    secrets.push('s3cr3t-env-value');
    await ok(s, carol.token, 'POST', `/jobs/${job.id}/cancel`);
    await waitFor(
      'the job to be cancelled',
      async () => (await getJob(s.api, admin, job.id)).state === 'cancelled',
    );
    await ok(s, admin, 'DELETE', '/projects/web/members/carol');
    await ok(s, carol.token, 'DELETE', `/tokens/${extra.id}`);
    await ok(s, admin, 'DELETE', '/projects/web');
    await ok(s, admin, 'DELETE', '/cluster-queues/held');
    await ok(s, admin, 'DELETE', '/users/carol');
    // A refused change is no change: nothing recorded.
    assert.equal((await call(s.api, admin, 'POST', '/cluster-queues', { name: 'default' })).status, 409);
    assert.equal((await call(s.api, carol.token, 'DELETE', '/projects/default')).status, 401);

    const entries = (await readAll(s, admin, { since: new Date(t0).toISOString() })).reverse();
    assert.deepEqual(
      entries.map((e) => [e.actor, e.action, e.subject, e.project]),
      [
        ['admin', 'user.create', 'carol', null],
        ['carol', 'token.create', extra.id, null],
        ['admin', 'queue.create', 'held', null],
        ['admin', 'queue.update', 'held', null],
        ['admin', 'project.create', 'web', 'web'],
        ['admin', 'project.update', 'web', 'web'],
        ['admin', 'member.set', 'carol', 'web'],
        ['admin', 'privilege.grant', 'target.gpu', 'web'],
        ['admin', 'privilege.revoke', 'target.gpu', 'web'],
        ['admin', 'priority-class.create', 'urgent', null],
        ['admin', 'priority-class.delete', 'urgent', null],
        ['carol', 'job.submit', String(job.id), 'web'],
        ['carol', 'job.cancel', String(job.id), 'web'],
        ['admin', 'member.remove', 'carol', 'web'],
        ['carol', 'token.revoke', extra.id, null],
        ['admin', 'project.delete', 'web', 'web'],
        ['admin', 'queue.delete', 'held', null],
        ['admin', 'user.delete', 'carol', null],
      ],
    );
    for (const e of entries) {
      assert.equal(e.address, '127.0.0.1', JSON.stringify(e));
      assert.equal(e.actorKind, 'user');
      const at = Date.parse(e.at);
      assert.ok(at >= t0 - 1000 && at <= Date.now() + 1000, e.at);
    }
    const detail = (action: string) => entries.find((e) => e.action === action)?.detail;
    assert.deepEqual(detail('queue.update'), { stopPolicy: 'Hold' }, 'a hold is a queue update saying so');
    assert.deepEqual(detail('member.set'), { role: 'member' });
    assert.deepEqual(detail('job.submit'), { name: 'true', target: 'local', env: ['API_KEY'] });
    assert.deepEqual(detail('token.create'), {
      user: 'carol',
      label: 'ci',
      expiresAt: (detail('token.create') as { expiresAt: string }).expiresAt,
    });
    assert.deepEqual(detail('project.delete'), {
      archivedAs: (detail('project.delete') as { archivedAs: string }).archivedAs,
      cancelledJobs: 0,
    });
  });

  it('records a job acting through its job token as that job', async () => {
    const s = server();
    const out = join(scratchDir('berth-audit-job-'), 'job-token');
    const job = await submit(s.api, s.adminToken, 'default', {
      // It keeps its token where the test can read it, then cancels itself.
      script: [
        `printf %s "$BERTH_TOKEN" > ${out}`,
        `curl -sf -X POST -H "Authorization: Bearer $BERTH_TOKEN" "$BERTH_URL/api/v1/jobs/$BERTH_JOB_ID/cancel"`,
        'sleep 30',
      ].join(' && '),
    });
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'cancelled');
    secrets.push(readFileSync(out, 'utf8'));
    const cancels = (await readAll(s, s.adminToken, { project: 'default' })).filter(
      (e) => e.action === 'job.cancel' && e.subject === String(job.id),
    );
    assert.deepEqual(
      cancels.map((e) => [e.actor, e.actorKind, e.address]),
      [[`job ${job.id}`, 'job', '127.0.0.1']],
    );
    assert.deepEqual(
      (await readAll(s, s.adminToken, { user: `job ${job.id}` })).map((e) => e.action),
      ['job.cancel'],
    );
  });

  it('records submissions in bulk, one row per job', async () => {
    const s = server();
    await ok(s, s.adminToken, 'POST', '/cluster-queues', {
      name: 'bulk',
      quota: { cpu: '1' },
      stopPolicy: 'Hold',
    });
    await ok(s, s.adminToken, 'POST', '/projects', { name: 'bulk', clusterQueue: 'bulk' });
    const jobs = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        submit(s.api, s.adminToken, 'bulk', {
          command: ['true'],
          name: `j${i}`,
          env: { SECRET: `v-${i}-x` },
        }),
      ),
    );
    secrets.push('v-7-x', 'v-299-x');
    const rows = (await readAll(s, s.adminToken, { project: 'bulk' })).filter(
      (e) => e.action === 'job.submit',
    );
    assert.deepEqual(
      rows.map((e) => Number(e.subject)).sort((a, b) => a - b),
      jobs.map((j) => j.id).sort((a, b) => a - b),
    );
    for (const e of rows) assert.deepEqual(e.detail?.env, ['SECRET']);
    // Repeated with the same idempotency key: one job, one row.
    const a = await submit(s.api, s.adminToken, 'bulk', { command: ['true'], idempotencyKey: 'k' });
    const b = await submit(s.api, s.adminToken, 'bulk', { command: ['true'], idempotencyKey: 'k' });
    assert.equal(a.id, b.id);
    const keyed = (await readAll(s, s.adminToken, { project: 'bulk' })).filter(
      (e) => e.subject === String(a.id),
    );
    assert.equal(keyed.length, 1);
  });

  it('filters by user, project and time, and pages with a cursor', async () => {
    const s = server();
    const all = await readAll(s, s.adminToken);
    assert.ok(all.length > 300);
    const paged = await readAll(s, s.adminToken, {}, 7);
    assert.deepEqual(
      paged.map((e) => e.id),
      all.map((e) => e.id),
      'pages of 7 give every entry once, newest first',
    );
    assert.ok(all.every((e, i) => i === 0 || e.id < all[i - 1]!.id));
    assert.ok(
      all.some((e) => e.actor === 'system'),
      'the first start is recorded as the server',
    );
    const carol = await readAll(s, s.adminToken, { user: 'carol' });
    assert.ok(carol.length > 0 && carol.every((e) => e.actor === 'carol'));
    const web = await readAll(s, s.adminToken, { project: 'web' });
    assert.ok(web.length > 0 && web.every((e) => e.project === 'web'));
    const middle = all[Math.floor(all.length / 2)]!;
    const until = await readAll(s, s.adminToken, { until: middle.at });
    assert.ok(until.length > 0 && until.every((e) => Date.parse(e.at) < Date.parse(middle.at)));
    const since = await readAll(s, s.adminToken, { since: middle.at });
    assert.equal(since.length + until.length, all.length);
    const bad = await call<{ error: { message: string } }>(
      s.api,
      s.adminToken,
      'GET',
      '/audit?since=yesterday',
    );
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /since: "yesterday" is not a time/);
    const badCursor = await call(s.api, s.adminToken, 'GET', '/audit?cursor=nope');
    assert.equal(badCursor.status, 400);
  });

  it('is for admins only', async () => {
    const s = server();
    const dave = await ok<{ token: string }>(s, s.adminToken, 'POST', '/users', { name: 'dave' });
    secrets.push(dave.token);
    const r = await call<{ error: { message: string } }>(s.api, dave.token, 'GET', '/audit');
    assert.equal(r.status, 403);
    assert.equal(r.body.error.message, 'only admins can read the audit log');
    assert.equal((await call(s.api, undefined, 'GET', '/audit')).status, 401);
  });

  it('never holds a secret: no token, no token hash, no env value', async () => {
    const s = server();
    const text = JSON.stringify(await readAll(s, s.adminToken));
    assert.ok(secrets.length >= 7);
    for (const secret of secrets) {
      assert.ok(!text.includes(secret), `the audit log holds a secret (${secret.slice(0, 8)}…)`);
      assert.ok(!text.includes(hashToken(secret)), 'the audit log holds a token hash');
    }
  });
});

describe('the audit log after kill -9', () => {
  const dir = scratchDir('berth-audit-crash-');
  const dataDir = join(dir, 'data');
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, localFactoryConfig(1));
  let server: ServerProcess | undefined;
  after(async () => {
    if (server) await killHard(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds a row for every change that survived, and none for a change that did not', async () => {
    server = await spawnServer(dataDir, config);
    const { api, token } = server;
    assert.equal(
      (
        await call(api, token, 'POST', '/cluster-queues', {
          name: 'q',
          quota: { cpu: '1000' },
          stopPolicy: 'Hold',
        })
      ).status,
      201,
    );
    assert.equal((await call(api, token, 'POST', '/projects', { name: 'p', clusterQueue: 'q' })).status, 201);
    // Submissions in flight, 32 at a time, until the server dies under them.
    const acknowledged: number[] = [];
    let dead = false;
    const flood = Promise.all(
      Array.from({ length: 32 }, async () => {
        while (!dead) {
          const r = await call<{ id: number }>(api, token, 'POST', '/projects/p/jobs', {
            command: ['true'],
          }).catch(() => undefined);
          if (r?.status === 201) acknowledged.push(r.body.id);
          else return;
        }
      }),
    );
    await waitFor('200 submissions to be acknowledged', () => acknowledged.length >= 200);
    dead = true;
    await killHard(server);
    server = undefined;
    await flood;

    server = await spawnServer(dataDir, config);
    const jobs: number[] = [];
    for (let before: number | undefined; ;) {
      const page = await call<{ id: number }[]>(
        server.api,
        server.token,
        'GET',
        `/projects/p/jobs?limit=1000${before ? `&before=${before}` : ''}`,
      );
      jobs.push(...page.body.map((j) => j.id));
      if (page.body.length < 1000) break;
      before = page.body.at(-1)!.id;
    }
    const audited = (await readAll({ api: server.api }, server.token, { project: 'p' }))
      .filter((e) => e.action === 'job.submit')
      .map((e) => Number(e.subject));
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
    assert.deepEqual(
      sorted(audited),
      sorted(jobs),
      'each surviving job has its row, and no row is without its job',
    );
    const known = new Set(jobs);
    assert.ok(
      acknowledged.every((id) => known.has(id)),
      'every acknowledged submission survived',
    );
    const setup = (await readAll(server, server.token)).map((e) => `${e.action} ${e.subject}`);
    assert.ok(setup.includes('queue.create q') && setup.includes('project.create p'));
  });
});
