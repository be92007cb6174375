/**
 * Authentication: every route outside the public two needs a valid user token. No header, a
 * wrong token, a malformed header, an expired token or a job token never reach the data.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { assertError, assertStatus, sha256, useServer, withDb } from './fixtures.js';

interface OpenApiDoc {
  paths: Record<string, Record<string, { security?: unknown[] }>>;
}

const ctx = useServer();
const { api } = ctx;

/** A body the route's schema accepts, so that only authorization can refuse the request. */
function validBody(method: string, path: string): unknown {
  if (method === 'POST' && path === '/users') return { name: 'intruder' };
  if (method === 'POST' && path === '/cluster-queues') return { name: 'intruder' };
  if (method === 'POST' && path === '/projects') return { name: 'intruder', clusterQueue: 'default' };
  if (path.includes('/members/') && method === 'PUT') return { role: 'owner' };
  if (method === 'POST' || method === 'PATCH') return {};
  return undefined;
}

/** Puts a token straight into the store, the way the job runner will mint job tokens. */
async function plantToken(token: string, row: { userId?: number; jobId?: number; expiresAt?: number }) {
  await withDb(ctx.server, (db) =>
    db
      .insertInto('api_tokens')
      .values({
        hash: sha256(token),
        user_id: row.userId ?? null,
        job_id: row.jobId ?? null,
        label: 'planted',
        created_at: Date.now(),
        expires_at: row.expiresAt ?? null,
        scope: null,
      })
      .execute(),
  );
}

/** The endpoint families under test here (job endpoints have their own tests). */
const FAMILY =
  /^\/(whoami|users|cluster-queues|projects)(\/\{name\}(\/tokens|\/(members|privileges)\/\{\w+\})?)?$/;

/** Every documented operation of those families that needs a token, path parameters filled in. */
async function protectedOperations(): Promise<[method: string, path: string][]> {
  const doc = (await api<OpenApiDoc>(undefined, 'GET', '/openapi.json')).body;
  const ops: [string, string][] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const route = path.replace(/^\/api\/v1/, '');
      if (!FAMILY.test(route) || (Array.isArray(op.security) && op.security.length === 0)) continue;
      ops.push([method.toUpperCase(), route.replace(/\{[^}]+\}/g, 'default')]);
    }
  }
  return ops;
}

void describe('unauthenticated requests', () => {
  const variants: [string, Record<string, string>][] = [
    ['no header', {}],
    ['unknown token', { authorization: 'Bearer berth_not-a-real-token' }],
    ['empty bearer', { authorization: 'Bearer ' }],
    ['basic scheme', { authorization: 'Basic YWRtaW46YWRtaW4=' }],
    ['token without scheme', { authorization: 'sometoken' }],
  ];

  void test('the protected operations cover every endpoint family', async () => {
    const paths = new Set((await protectedOperations()).map(([m, p]) => `${m} ${p}`));
    for (const expected of [
      'GET /whoami',
      'POST /users',
      'GET /users',
      'GET /users/default',
      'DELETE /users/default',
      'POST /users/default/tokens',
      'POST /cluster-queues',
      'GET /cluster-queues',
      'GET /cluster-queues/default',
      'PATCH /cluster-queues/default',
      'DELETE /cluster-queues/default',
      'POST /projects',
      'GET /projects',
      'GET /projects/default',
      'PATCH /projects/default',
      'DELETE /projects/default',
      'PUT /projects/default/members/default',
      'DELETE /projects/default/members/default',
      'PUT /projects/default/privileges/default',
      'DELETE /projects/default/privileges/default',
    ]) {
      assert.ok(paths.has(expected), `${expected} is documented and protected`);
    }
  });

  for (const [label, headers] of variants) {
    void test(`${label}: 401 on every protected operation, nothing changes`, async () => {
      for (const [method, path] of await protectedOperations()) {
        const res = await api(undefined, method, path, validBody(method, path), headers);
        assertError(res, 401, 'unauthorized', /token/, `${label} ${method} ${path}`);
      }
      // The defaults survived the DELETEs above.
      assertStatus(await api(ctx.admin, 'GET', '/projects/default'), 200);
      assertStatus(await api(ctx.admin, 'GET', '/cluster-queues/default'), 200);
    });
  }

  void test('a missing header asks for a bearer token; a wrong one says it is invalid', async () => {
    assertError(await api(undefined, 'GET', '/projects'), 401, 'unauthorized', /Authorization: Bearer/);
    assertError(await api('berth_wrong', 'GET', '/projects'), 401, 'unauthorized', /invalid token/);
  });

  void test('a 401 names the Bearer scheme (RFC 7235)', async () => {
    for (const authorization of [undefined, 'Bearer wrong']) {
      const res = await fetch(`${ctx.server.api}/projects`, {
        headers: authorization ? { authorization } : {},
      });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer\b/);
    }
    const ok = await fetch(`${ctx.server.api}/projects`, {
      headers: { authorization: `Bearer ${ctx.admin}` },
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('www-authenticate'), null);
  });

  void test('the scheme name is case-insensitive (RFC 7235)', async () => {
    const res = await api(undefined, 'GET', '/whoami', undefined, {
      authorization: `bearer ${ctx.admin}`,
    });
    assertStatus(res, 200);
  });

  void test('the admin token with a wrong scheme is refused', async () => {
    const res = await api(undefined, 'GET', '/whoami', undefined, {
      authorization: `Token ${ctx.admin}`,
    });
    assertError(res, 401, 'unauthorized');
  });

  void test('a token with a character changed is refused', async () => {
    const t = ctx.admin;
    const changed = t.slice(0, -1) + (t.endsWith('A') ? 'B' : 'A');
    assertError(await api(changed, 'GET', '/whoami'), 401, 'unauthorized', /invalid token/);
    assertStatus(await api(t, 'GET', '/whoami'), 200);
  });

  void test('a token is refused from the moment it expires, even right after it was used', async () => {
    const token = 'berth_expiring-token';
    await plantToken(token, { userId: 1, expiresAt: Date.now() + 3_600_000 });
    for (let i = 0; i < 2; i++) assertStatus(await api(token, 'GET', '/whoami'), 200);
    // Its hour is up (moved in the store rather than waited for).
    await withDb(ctx.server, (db) =>
      db
        .updateTable('api_tokens')
        .set({ expires_at: Date.now() - 1 })
        .where('hash', '=', sha256(token))
        .execute(),
    );
    assertError(await api(token, 'GET', '/whoami'), 401, 'unauthorized', /expired/);
  });

  void test('an expired token is refused with a reason; an unexpired one works', async () => {
    await plantToken('berth_expired-token', { userId: 1, expiresAt: Date.now() - 1000 });
    await plantToken('berth_fresh-token', { userId: 1, expiresAt: Date.now() + 3_600_000 });
    assertError(await api('berth_expired-token', 'GET', '/whoami'), 401, 'unauthorized', /expired/);
    const ok = await api<{ name: string }>('berth_fresh-token', 'GET', '/whoami');
    assertStatus(ok, 200);
    assert.equal(ok.body.name, 'admin');
  });
});

void describe('job tokens', () => {
  const jobToken = 'berthj_planted-job-token';
  before(() => plantToken(jobToken, { jobId: 41 }));

  void test('whoami names the job and nothing else', async () => {
    const res = await api<Record<string, unknown>>(jobToken, 'GET', '/whoami');
    assertStatus(res, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['job', 'kind']);
    assert.equal(res.body.kind, 'job');
    assert.equal(Number(res.body.job), 41);
  });

  void test('a job token reaches no user, queue or project endpoint', async () => {
    for (const [method, path] of await protectedOperations()) {
      if (path === '/whoami') continue;
      const res = await api(jobToken, method, path, validBody(method, path));
      assertError(res, 403, 'forbidden', /job token can only read its own job/, `${method} ${path}`);
    }
    // Nothing was created, changed or deleted.
    const admin = ctx.admin;
    assertStatus(await api(admin, 'GET', '/projects/default'), 200);
    assertStatus(await api(admin, 'GET', '/cluster-queues/default'), 200);
    assertError(await api(admin, 'GET', '/users/intruder'), 404, 'not_found');
    assertError(await api(admin, 'GET', '/projects/intruder'), 404, 'not_found');
  });
});
