/**
 * What the `token` well's token may do, through the real API of a real server: a job holding it
 * reads the token from its metadata (`GET /job/self` with its own job token, as a job would) and
 * the test then calls the API with it. By default (`access: read`) it reads its project — the
 * project, its jobs, their logs and events — and nothing else; `access: submit` also submits and
 * cancels jobs there. Every other call is refused before its handler runs, which the sweep over
 * the OpenAPI document checks route by route, so a route added later is covered too.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/domain/errors.js';
import { createWells } from '../../src/wells/index.js';
import { assertError, assertStatus, createProject, createUser, useServer } from '../api/fixtures.js';
import { events, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { waitFor } from '../helpers/wait.js';

const ctx = useServer(
  async ({ api, admin }) => {
    await createUser(api, admin, 'mark').then((u) => (mark = u.token));
    await createUser(api, admin, 'uma').then((u) => (uma = u.token));
    for (const [user, role] of [
      ['mark', 'member'],
      ['uma', 'member'],
    ]) {
      assertStatus(await api(admin, 'PUT', `/projects/default/members/${user}`, { role }), 200);
    }
    await createProject(api, admin, 'other', 'default');
  },
  {
    config: [
      localFactoryConfig(),
      'resources:',
      '  tok: { kind: token, capacity: 4 }',
      '  tok-submit: { kind: token, capacity: 4, access: submit }',
    ].join('\n'),
  },
);
const { api } = ctx;
let mark = '';
let uma = '';

const server = () => ctx.server;
/** Where a job's script writes and waits: the server's data directory, removed with it. */
/** Where jobs leave what the test reads: a directory their own uids may write (scratch.ts). */
const scratch = scratchDir('berth-token-rights-');
const file = (name: string) => join(scratch, name);

interface Holder {
  job: JobView;
  token: string;
  /** Lets the job end. */
  release(): void;
}

/**
 * A job, submitted by mark, holding resource `type`: it reads its own metadata from
 * `GET /job/self` with its job token (BERTH_TOKEN) into a file, then waits for a gate. Returns
 * the project token the metadata holds.
 */
let holders = 0;
async function holdToken(type: string): Promise<Holder> {
  const n = ++holders;
  const out = file(`self-${n}.json`);
  const gate = file(`gate-holder-${n}`);
  const job = await submit(server().api, mark, 'default', {
    resources: [type],
    script: [
      `curl -sf -H "Authorization: Bearer $BERTH_TOKEN" "$BERTH_URL/api/v1/job/self" > ${out}.tmp`,
      `mv ${out}.tmp ${out}`,
      `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    ].join(' && '),
  });
  const self = await waitFor(`job ${job.id} to read its metadata`, () => {
    try {
      return JSON.parse(readFileSync(out, 'utf8')) as {
        id: number;
        resources: { type: string; metadata: Record<string, string> | null }[];
      };
    } catch {
      return undefined;
    }
  });
  assert.equal(self.id, job.id);
  const metadata = self.resources.find((r) => r.type === type)?.metadata;
  assert.ok(metadata, `job ${job.id} holds ${type}: ${JSON.stringify(self)}`);
  assert.equal(metadata.project, 'default');
  assert.match(metadata.token ?? '', /^berth_/);
  return { job, token: metadata.token!, release: () => writeFileSync(gate, '') };
}

/** A job of uma's in `default` that runs until its gate opens (or it is cancelled). */
async function victim(name: string): Promise<{ job: JobView; release(): void }> {
  const gate = file(`gate-${name}`);
  const job = await submit(server().api, uma, 'default', {
    name,
    script: `echo hello from ${name}; while [ ! -e ${gate} ]; do sleep 0.05; done`,
  });
  await waitFor(`${name} to run`, async () => {
    const r = await api<JobView>(ctx.admin, 'GET', `/jobs/${job.id}`);
    return r.body.state === 'running';
  });
  return { job, release: () => writeFileSync(gate, '') };
}

/** The refusal of a call the token's access does not list, from the one check before handlers. */
const refusedCall = (access: string) => new RegExp(`^a project token with access ${access} may not call `);

const jobCount = async (project: string) =>
  (await api<JobView[]>(ctx.admin, 'GET', `/projects/${project}/jobs?limit=1000`)).body.length;

/** The calls a read token may make, as in service/tenancy/access.ts: the rest of the API is refused. */
const READ_CALLS = [
  'GET /whoami',
  'GET /projects/{name}',
  'GET /projects/{name}/jobs',
  'GET /jobs/{id}',
  'GET /jobs/{id}/events',
  'GET /jobs/{id}/logs',
  'GET /jobs/{id}/artifacts',
  'GET /jobs/{id}/artifacts/{*}',
];
const SUBMIT_CALLS = ['POST /projects/{name}/jobs', 'POST /jobs/{id}/cancel'];

void describe('the token well with the default access (read)', () => {
  let holder: Holder;
  let target: Awaited<ReturnType<typeof victim>>;
  let elsewhere: JobView;

  before(async () => {
    elsewhere = await submit(server().api, ctx.admin, 'other', { command: ['true'] });
    target = await victim('victim-read');
    holder = await holdToken('tok');
  });
  after(async () => {
    holder.release();
    target.release();
    await waitDone(server().api, ctx.admin, target.job.id);
  });

  void test('reads its project: the project, its jobs, their logs and events', async () => {
    const project = await api<{ name: string; role: string }>(holder.token, 'GET', '/projects/default');
    assertStatus(project, 200);
    assert.equal(project.body.name, 'default');
    assert.equal(project.body.role, 'viewer', 'the token reads as a viewer, not as a member');
    const list = await api<JobView[]>(holder.token, 'GET', '/projects/default/jobs');
    assertStatus(list, 200);
    assert.ok(list.body.some((j) => j.id === target.job.id));
    assertStatus(await api(holder.token, 'GET', `/jobs/${target.job.id}`), 200);
    assertStatus(await api(holder.token, 'GET', `/jobs/${target.job.id}/events`), 200);
    const logs = await api(holder.token, 'GET', `/jobs/${target.job.id}/logs`);
    assertStatus(logs, 200);
    assert.match(logs.text, /hello from victim-read/);
    const me = await api(holder.token, 'GET', '/whoami');
    assert.deepEqual(me.body, { kind: 'project-token', project: 'default', job: holder.job.id });
  });

  void test('cannot submit: 403, and no job is made', async () => {
    const before = await jobCount('default');
    assertError(
      await api(holder.token, 'POST', '/projects/default/jobs', { command: ['true'] }),
      403,
      'forbidden',
      refusedCall('read'),
    );
    assert.equal(await jobCount('default'), before);
  });

  void test("cannot cancel another user's job: 403, and it runs on", async () => {
    assertError(
      await api(holder.token, 'POST', `/jobs/${target.job.id}/cancel`),
      403,
      'forbidden',
      refusedCall('read'),
    );
    const after = await api<JobView & { cancelRequested: boolean }>(
      ctx.admin,
      'GET',
      `/jobs/${target.job.id}`,
    );
    assert.equal(after.body.state, 'running');
    assert.equal(after.body.cancelRequested, false);
    assert.ok(
      !(await events(server().api, ctx.admin, target.job.id)).some((e) => e.type === 'cancel-requested'),
    );
  });

  void test('cannot change or delete its project, or its members', async () => {
    const before = (await api(ctx.admin, 'GET', '/projects/default')).body;
    for (const [method, path, body] of [
      ['PATCH', '/projects/default', { description: 'taken over' }],
      ['DELETE', '/projects/default', undefined],
      ['PUT', '/projects/default/members/mark', { role: 'owner' }],
    ] as const) {
      assertError(
        await api(holder.token, method, path, body),
        403,
        'forbidden',
        refusedCall('read'),
        `${method} ${path}`,
      );
    }
    assert.deepEqual((await api(ctx.admin, 'GET', '/projects/default')).body, before);
  });

  void test('another project is not found, as for any non-member', async () => {
    assertError(await api(holder.token, 'GET', '/projects/other'), 404, 'not_found');
    assertError(await api(holder.token, 'GET', '/projects/other/jobs'), 404, 'not_found');
    assertError(await api(holder.token, 'GET', `/jobs/${elsewhere.id}`), 404, 'not_found');
  });

  void test('no user list, no admin endpoint, no resource metadata', async () => {
    for (const path of [
      '/users',
      '/resource-instances',
      '/workers',
      '/metrics',
      '/cluster-queues',
      '/job/self',
    ]) {
      assertError(await api(holder.token, 'GET', path), 403, 'forbidden', refusedCall('read'), path);
    }
  });

  void test('every route of the API but the reads of its project is refused before its handler', async () => {
    const doc = await api<{ paths: Record<string, Record<string, { security?: unknown[] }>> }>(
      undefined,
      'GET',
      '/openapi.json',
    );
    assertStatus(doc, 200);
    const seen: string[] = [];
    for (const [full, ops] of Object.entries(doc.body.paths)) {
      assert.ok(full.startsWith('/api/v1/'), full);
      const path = full.slice('/api/v1'.length);
      for (const [method, op] of Object.entries(ops)) {
        const call = `${method.toUpperCase()} ${path}`;
        seen.push(call);
        if (op.security?.length === 0) continue; // public: needs no token at all (/health)
        // Real names and ids: a call that got past the check would reach real data.
        const url = path
          .replace('{name}', 'default')
          .replace('{id}', String(target.job.id))
          .replace('{user}', 'mark')
          .replace('{privilege}', 'resource.x');
        // No body and no query: the check must answer before validation does.
        const res = await api(holder.token, method.toUpperCase(), url);
        // An artifact's download got past the check when it looked for the name (there is none).
        if (call.endsWith('/artifacts/{*}')) assertError(res, 404, 'not_found', /has no artifact/, call);
        else if (READ_CALLS.includes(call)) assertStatus(res, 200, call);
        else assertError(res, 403, 'forbidden', refusedCall('read'), call);
      }
    }
    // The lists above name real routes (a renamed one would make the sweep vacuous).
    for (const call of [...READ_CALLS, ...SUBMIT_CALLS]) assert.ok(seen.includes(call), call);
  });
});

void describe('the token well with access: submit', () => {
  let holder: Holder;

  before(async () => {
    holder = await holdToken('tok-submit');
  });
  after(() => holder.release());

  void test('submits to its project, as a member', async () => {
    const res = await api<JobView & { createdBy: string }>(holder.token, 'POST', '/projects/default/jobs', {
      command: ['true'],
    });
    assertStatus(res, 201);
    assert.equal(res.body.createdBy, `job ${holder.job.id} (project token)`);
    assert.equal((await waitDone(server().api, ctx.admin, res.body.id)).state, 'succeeded');
  });

  void test("cancels another user's job in its project", async () => {
    const target = await victim('victim-submit');
    assertStatus(await api(holder.token, 'POST', `/jobs/${target.job.id}/cancel`), 200);
    assert.equal((await waitDone(server().api, ctx.admin, target.job.id)).state, 'cancelled');
  });

  void test('still nothing else: no change to the project, no other project, no users, no metadata', async () => {
    assertError(
      await api(holder.token, 'PATCH', '/projects/default', { description: 'taken over' }),
      403,
      'forbidden',
      refusedCall('submit'),
    );
    assertError(
      await api(holder.token, 'DELETE', '/projects/default'),
      403,
      'forbidden',
      refusedCall('submit'),
    );
    assertError(
      await api(holder.token, 'POST', '/projects/other/jobs', { command: ['true'] }),
      404,
      'not_found',
    );
    assertError(await api(holder.token, 'GET', '/users'), 403, 'forbidden', refusedCall('submit'));
    assertError(await api(holder.token, 'GET', '/job/self'), 403, 'forbidden', refusedCall('submit'));
  });
});

void describe("the token's life", () => {
  test('says its access when minted, and is revoked when the job ends', async () => {
    const holder = await holdToken('tok');
    assertStatus(await api(holder.token, 'GET', '/projects/default'), 200);
    const minted = (await events(server().api, ctx.admin, holder.job.id)).find(
      (e) => e.type === 'token-minted',
    );
    assert.match(minted?.message ?? '', /^project token for default \(access: read\) made for resource tok /);
    holder.release();
    assert.equal((await waitDone(server().api, ctx.admin, holder.job.id)).state, 'succeeded');
    assertError(await api(holder.token, 'GET', '/projects/default'), 401, 'unauthorized');
  });
});

void describe('configuration', () => {
  test('only token wells take access', () => {
    const minter = { mint: async () => ({ token: 't', url: 'u' }), revoke: async () => {} };
    assert.throws(
      () =>
        createWells(
          { lic: { kind: 'semaphore', capacity: 1, access: 'read' } },
          { baseDir: '.', tokens: minter },
        ),
      (e) => e instanceof ConfigError && e.key === 'resources.lic.access',
    );
  });
});
