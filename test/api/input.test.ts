/**
 * Bad input: every kind is a 4xx with `{"error":{"code","message"}}` whose message names what is
 * wrong, never a 500, and never a change to the data.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import {
  assertError,
  assertStatus,
  createProject,
  createQueue,
  createUser,
  useServer,
  type ErrorBody,
  type QueueBody,
} from './fixtures.js';

const ctx = useServer(async () => {
  await createQueue(api, ctx.admin, 'q1');
  await createProject(api, ctx.admin, 'p1', 'q1');
  await createUser(api, ctx.admin, 'bob');
});
const { api } = ctx;

interface Row {
  label: string;
  method: string;
  path: string;
  /** An object is sent as JSON; a string is sent as it is. */
  body?: unknown;
  headers?: Record<string, string>;
  status: number;
  code: string;
  message: RegExp;
}

const bad = (
  label: string,
  method: string,
  path: string,
  body: unknown,
  message: RegExp,
  status = 400,
  code = 'bad_request',
): Row => ({ label, method, path, body, status, code, message });

/** A cluster queue body with `fields` on top of a valid one. */
const cq = (fields: object) => ({ name: 'cq-new', quota: { cpu: '1', memory: '1Gi' }, ...fields });

async function snapshot() {
  const get = async (path: string) => (await api(ctx.admin, 'GET', path)).body;
  return {
    users: await get('/users'),
    queues: await get('/cluster-queues'),
    projects: await get('/projects'),
    p1: await get('/projects/p1'),
  };
}

function runRows(rows: Row[]): void {
  for (const row of rows) {
    void test(`${row.label} → ${row.status}`, async () => {
      const before = await snapshot();
      const res = await api(ctx.admin, row.method, row.path, row.body, row.headers);
      assertError(res, row.status, row.code, row.message, `${row.method} ${row.path}`);
      assert.deepEqual(await snapshot(), before, 'a refused request changes nothing');
    });
  }
}

void describe('bodies that are not a JSON object', () => {
  const text = { 'content-type': 'text/plain' };
  runRows([
    bad(
      'malformed JSON',
      'POST',
      '/users',
      '{"name": ',
      /malformed JSON in request body: Unexpected end of JSON input/,
    ),
    bad('trailing garbage', 'POST', '/users', '{"name": "x"} x', /malformed JSON/),
    bad('empty body with JSON content type', 'POST', '/users', '', /body is empty.*application\/json/),
    bad('a JSON array', 'POST', '/users', [{ name: 'x' }], /request body must be object/),
    bad('JSON null', 'POST', '/users', 'null', /request body must be object/),
    bad('a JSON string', 'POST', '/cluster-queues', '"q"', /request body must be object/),
    bad(
      'a __proto__ key',
      'POST',
      '/users',
      '{"name":"x","__proto__":{"admin":true}}',
      /a key "__proto__".* is refused/,
    ),
    bad(
      'a deep __proto__ key',
      'POST',
      '/cluster-queues',
      '{"name":"q","quota":{"__proto__":"1"}}',
      /"__proto__"/,
    ),
    bad(
      'constructor.prototype',
      'POST',
      '/users',
      '{"name":"x","constructor":{"prototype":{"admin":true}}}',
      /"constructor" with "prototype"/,
    ),
    {
      label: 'JSON sent as text/plain',
      method: 'POST',
      path: '/users',
      body: '{"name":"textual"}',
      headers: text,
      status: 415,
      code: 'unsupported_media_type',
      message: /content type "text\/plain".*application\/json/,
    },
    {
      label: 'XML',
      method: 'POST',
      path: '/projects',
      body: '<project/>',
      headers: { 'content-type': 'application/xml' },
      status: 415,
      code: 'unsupported_media_type',
      message: /application\/json/,
    },
    {
      label: 'a form',
      method: 'PATCH',
      path: '/projects/p1',
      body: 'description=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      status: 415,
      code: 'unsupported_media_type',
      message: /application\/json/,
    },
    {
      label: 'no body at all',
      method: 'POST',
      path: '/cluster-queues',
      status: 400,
      code: 'bad_request',
      message: /request body is missing.*JSON object/,
    },
    {
      label: 'no body for a member',
      method: 'PUT',
      path: '/projects/p1/members/bob',
      status: 400,
      code: 'bad_request',
      message: /request body is missing/,
    },
  ]);

  void test('JSON with a charset parameter is accepted', async () => {
    const res = await api(
      ctx.admin,
      'POST',
      '/users',
      { name: 'charset' },
      {
        'content-type': 'application/json; charset=utf-8',
      },
    );
    assertStatus(res, 201);
  });

  void test('a body of more than 1 MiB → 413; one just under the limit is read', async () => {
    const big = JSON.stringify({ name: 'big', description: 'x'.repeat(1024 * 1024) });
    assertError(await api(ctx.admin, 'POST', '/users', big), 413, 'payload_too_large', /too large/);
    assertError(await api(ctx.admin, 'PATCH', '/projects/p1', big), 413, 'payload_too_large', /too large/);
    const under = JSON.stringify({ name: 'under', pad: 'x'.repeat(1024 * 1024 - 100) });
    assert.ok(Buffer.byteLength(under) < 1024 * 1024);
    // Read and validated, so refused for its unknown field rather than for its size.
    assertError(await api(ctx.admin, 'POST', '/users', under), 400, 'bad_request', /unknown field "pad"/);
  });
});

void describe('wrong types, unknown and missing fields', () => {
  runRows([
    bad(
      'string for a boolean',
      'POST',
      '/users',
      { name: 'x', admin: 'true' },
      /body field "admin" must be boolean/,
    ),
    bad('number for a string', 'POST', '/users', { name: 5 }, /body field "name" must be string/),
    bad(
      'number for a description',
      'PATCH',
      '/projects/p1',
      { description: 5 },
      /"description" must be string/,
    ),
    bad('string for active', 'PATCH', '/projects/p1', { active: 'yes' }, /"active" must be boolean/),
    bad(
      'null for a description',
      'PATCH',
      '/projects/p1',
      { description: null },
      /"description" must be string/,
    ),
    bad(
      'object for an array',
      'POST',
      '/projects',
      { name: 'x', clusterQueue: 'q1', tags: { a: 1 } },
      /"tags" must be array/,
    ),
    bad(
      'number in an array of strings',
      'PATCH',
      '/projects/p1',
      { tags: ['ok', 1] },
      /"tags.1" must be string/,
    ),
    bad('array for an object', 'POST', '/cluster-queues', cq({ quota: ['1'] }), /"quota" must be object/),
    bad(
      'boolean for a quantity',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: true } }),
      /"quota.cpu" must be string or number/,
    ),
    bad(
      'object for a quantity',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: { v: 1 } } }),
      /"quota.cpu" must be string or number/,
    ),
    bad(
      'negative number for a quantity',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: -1 } }),
      /quota.cpu.*(>= 0|non-negative)/,
    ),
    bad(
      'number for a cohort',
      'POST',
      '/cluster-queues',
      cq({ cohort: 5 }),
      /"cohort" must be string or null/,
    ),
    bad(
      'string for preemption',
      'POST',
      '/cluster-queues',
      cq({ preemption: 'Never' }),
      /"preemption" must be object/,
    ),
    bad(
      'unknown strategy',
      'POST',
      '/cluster-queues',
      cq({ queueingStrategy: 'Fast' }),
      /"queueingStrategy" must be one of StrictFIFO, BestEffortFIFO, Backfill/,
    ),
    bad(
      'unknown runtime estimates',
      'POST',
      '/cluster-queues',
      cq({ estimates: 'guessed' }),
      /"estimates" must be one of requested, learned/,
    ),
    bad(
      'too many backfill reservations',
      'POST',
      '/cluster-queues',
      cq({ queueingStrategy: 'Backfill', backfill: { reservations: 101 } }),
      /"backfill\.reservations" must be <= 100/,
    ),
    bad(
      'no backfill reservation',
      'PATCH',
      '/cluster-queues/q1',
      { backfill: { reservations: 0 } },
      /"backfill\.reservations" must be >= 1/,
    ),
    bad(
      'unknown stop policy',
      'PATCH',
      '/cluster-queues/q1',
      { stopPolicy: 'Pause' },
      /"stopPolicy" must be one of None, Hold, HoldAndDrain/,
    ),
    bad(
      'unknown preemption policy',
      'PATCH',
      '/cluster-queues/q1',
      { preemption: { withinClusterQueue: 'Always' } },
      /"preemption.withinClusterQueue" must be one of/,
    ),
    bad(
      'bad role',
      'PUT',
      '/projects/p1/members/bob',
      { role: 'boss' },
      /"role" must be one of viewer, member, owner/,
    ),
    bad('number for a token label', 'POST', '/users/bob/tokens', { label: 5 }, /"label" must be string/),
    bad('unknown top-level field', 'POST', '/users', { name: 'x', email: 'x@y' }, /unknown field "email"/),
    bad(
      'unknown nested field',
      'POST',
      '/cluster-queues',
      cq({ preemption: { foo: 1 } }),
      /unknown field "preemption.foo"/,
    ),
    bad('renaming a queue', 'PATCH', '/cluster-queues/q1', { name: 'q9' }, /unknown field "name"/),
    bad('renaming a project', 'PATCH', '/projects/p1', { name: 'p9' }, /unknown field "name"/),
    bad(
      'members in a project body',
      'POST',
      '/projects',
      { name: 'x', clusterQueue: 'q1', members: [] },
      /unknown field "members"/,
    ),
    bad(
      'extra field next to a role',
      'PUT',
      '/projects/p1/members/bob',
      { role: 'viewer', admin: true },
      /unknown field "admin"/,
    ),
    bad('missing name', 'POST', '/cluster-queues', { quota: {} }, /missing required field "name"/),
    bad('missing cluster queue', 'POST', '/projects', { name: 'x' }, /missing required field "clusterQueue"/),
    bad('missing role', 'PUT', '/projects/p1/members/bob', {}, /missing required field "role"/),
    bad('empty name', 'POST', '/users', { name: '' }, /"name" must NOT have fewer than 1 characters/),
    bad(
      'empty cohort',
      'POST',
      '/cluster-queues',
      cq({ cohort: '' }),
      /"cohort" must NOT have fewer than 1 characters/,
    ),
  ]);
});

void describe('quantities', () => {
  const notQuantity = [
    '8x',
    '-1',
    '1.2.3',
    '',
    ' ',
    '1e',
    'Gi',
    '1 Gi',
    '0x10',
    'NaN',
    'Infinity',
    '1KI',
    '1gi',
    '1Gi2',
  ];
  runRows([
    ...notQuantity.map((q) =>
      bad(
        `quota ${JSON.stringify(q)}`,
        'POST',
        '/cluster-queues',
        cq({ quota: { cpu: q } }),
        /quota\.cpu: .* is not a quantity \(use a non-negative number/,
      ),
    ),
    bad(
      'bad borrowing limit',
      'POST',
      '/cluster-queues',
      cq({ cohort: 'c', borrowingLimit: { memory: '2x' } }),
      /borrowingLimit\.memory: "2x" is not a quantity/,
    ),
    bad(
      'bad lending limit',
      'PATCH',
      '/cluster-queues/q1',
      { cohort: 'c', lendingLimit: { cpu: '1.5.1' } },
      /lendingLimit\.cpu: "1.5.1" is not a quantity/,
    ),
    bad(
      'huge exponent',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: '1e400' } }),
      /quota\.cpu: "1e400" is too large/,
    ),
    bad(
      'huge mantissa',
      'POST',
      '/cluster-queues',
      cq({ quota: { memory: '99999999999999999999Ei' } }),
      /quota\.memory: .* is too large/,
    ),
    bad(
      'more than 2^53 bytes',
      'POST',
      '/cluster-queues',
      cq({ quota: { memory: '8Ei' } }),
      /quota\.memory: "8Ei" is too large/,
    ),
    bad(
      'huge JSON number',
      'POST',
      '/cluster-queues',
      cq({ quota: { jobs: 1e300 } }),
      /quota\.jobs: .* is too large/,
    ),
    bad(
      'an over-long quantity',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: '1'.repeat(65) } }),
      /"quota.cpu" must NOT have more than 64 characters/,
    ),
  ]);

  void test('tiny quantities round up to one unit instead of being "too large"', async () => {
    const res = await api<QueueBody>(ctx.admin, 'POST', '/cluster-queues', {
      name: 'tiny',
      quota: { memory: '1e-100', cpu: 1e-9, jobs: '0.' + '0'.repeat(61) + '1' },
    });
    assertStatus(res, 201);
    assert.deepEqual(res.body.quota, { memory: '1e-100', cpu: '1e-9', jobs: '0.' + '0'.repeat(61) + '1' });
  });

  void test('good quantities are kept as written (numbers become strings)', async () => {
    const res = await api<QueueBody>(ctx.admin, 'POST', '/cluster-queues', {
      name: 'kept',
      quota: { cpu: '500m', memory: '16Gi', 'nvidia.com/gpu': 2, jobs: '1e3', storage: '1.5T' },
    });
    assertStatus(res, 201);
    assert.deepEqual(res.body.quota, {
      cpu: '500m',
      memory: '16Gi',
      'nvidia.com/gpu': '2',
      jobs: '1e3',
      storage: '1.5T',
    });
  });
});

void describe('names', () => {
  const badResources = ['bad name', 'a/b/c', '-cpu', '/cpu', 'cpu/', 'Example.com/gpu', 'gpu!'];
  const badLabels = ['Upper', 'a'.repeat(64), '-lead', 'trail-', 'under_score', 'dot.ted', 'sp ace', 'é'];
  runRows([
    ...badResources.map((r) =>
      bad(
        `resource ${JSON.stringify(r)}`,
        'POST',
        '/cluster-queues',
        cq({ quota: { [r]: '1' } }),
        /quota: resource .* must be a resource name such as cpu/,
      ),
    ),
    bad(
      'resource in a limit',
      'POST',
      '/cluster-queues',
      cq({ cohort: 'c', lendingLimit: { 'x y': '1' } }),
      /lendingLimit: resource "x y" must be a resource name/,
    ),
    ...badLabels.map((n) =>
      bad(
        `queue name ${JSON.stringify(n.slice(0, 12))}`,
        'POST',
        '/cluster-queues',
        cq({ name: n }),
        /cluster queue name .* must be a DNS label: 1-63 lowercase/,
      ),
    ),
    ...badLabels.map((n) =>
      bad(
        `project name ${JSON.stringify(n.slice(0, 12))}`,
        'POST',
        '/projects',
        { name: n, clusterQueue: 'q1' },
        /project name .* must be a DNS label/,
      ),
    ),
    ...badLabels.map((n) =>
      bad(
        `cohort ${JSON.stringify(n.slice(0, 12))}`,
        'POST',
        '/cluster-queues',
        cq({ cohort: n }),
        /cohort .* must be a DNS label/,
      ),
    ),
    ...['Bob', '_bob', 'bob_', 'a'.repeat(64), 'b b', 'bob@x'].map((n) =>
      bad(
        `user name ${JSON.stringify(n.slice(0, 12))}`,
        'POST',
        '/users',
        { name: n },
        /user name .* must be 1-63 lowercase letters/,
      ),
    ),
    bad(
      'bad tag',
      'POST',
      '/projects',
      { name: 'tagged', clusterQueue: 'q1', tags: ['has space'] },
      /tag "has space" must be 1-63/,
    ),
    bad('bad tag in a patch', 'PATCH', '/projects/p1', { tags: ['-x'] }, /tag "-x"/),
    bad(
      'bad privilege',
      'PUT',
      '/projects/p1/privileges/Target.GPU',
      undefined,
      /privilege "Target.GPU" must be lowercase/,
    ),
  ]);

  void test('names at the limits are accepted', async () => {
    const long = 'a'.repeat(63);
    assertStatus(await api(ctx.admin, 'POST', '/cluster-queues', { name: long, cohort: long }), 201);
    assertStatus(await api(ctx.admin, 'POST', '/projects', { name: long, clusterQueue: long }), 201);
    assertStatus(await api(ctx.admin, 'POST', '/users', { name: 'a.b_c-d' }), 201);
    assertStatus(
      await api(ctx.admin, 'POST', '/cluster-queues', cq({ name: 'gpus', quota: { 'nvidia.com/gpu': 8 } })),
      201,
    );
  });
});

void describe('queue rules', () => {
  runRows([
    bad(
      'lending limit above quota',
      'POST',
      '/cluster-queues',
      cq({ cohort: 'c', quota: { cpu: '1' }, lendingLimit: { cpu: '2' } }),
      /lendingLimit\.cpu: 2 is more than the nominal quota 1/,
    ),
    bad(
      'lending limit above quota in other units',
      'POST',
      '/cluster-queues',
      cq({ cohort: 'c', quota: { memory: '1Gi' }, lendingLimit: { memory: '1025Mi' } }),
      /lendingLimit\.memory: 1025Mi is more than the nominal quota 1Gi/,
    ),
    bad(
      'borrowing limit without cohort',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: '1' }, borrowingLimit: { cpu: '2' } }),
      /borrowingLimit\.cpu: a borrowingLimit needs a cohort/,
    ),
    bad(
      'lending limit without cohort',
      'POST',
      '/cluster-queues',
      cq({ quota: { cpu: '1' }, lendingLimit: { cpu: '1' } }),
      /lendingLimit\.cpu: a lendingLimit needs a cohort/,
    ),
    bad(
      'limit on a resource without quota',
      'POST',
      '/cluster-queues',
      cq({ cohort: 'c', quota: { cpu: '1' }, borrowingLimit: { memory: '1Gi' } }),
      /borrowingLimit\.memory: the queue has no quota for memory/,
    ),
    bad(
      'patch that leaves a limit without its quota',
      'PATCH',
      '/cluster-queues/with-limits',
      { quota: { memory: '1Gi' } },
      /borrowingLimit\.cpu: the queue has no quota for cpu/,
    ),
    bad(
      'patch that removes the cohort of a limit',
      'PATCH',
      '/cluster-queues/with-limits',
      { cohort: null },
      /needs a cohort/,
    ),
    bad(
      'patch that shrinks quota below lending',
      'PATCH',
      '/cluster-queues/with-limits',
      { quota: { cpu: '1' } },
      /lendingLimit\.cpu: 2 is more than the nominal quota 1/,
    ),
  ]);

  before(async () => {
    await createQueue(api, ctx.admin, 'with-limits', {
      cohort: 'pool',
      quota: { cpu: '4' },
      borrowingLimit: { cpu: '2' },
      lendingLimit: { cpu: '2' },
    });
  });

  void test('a lending limit equal to the quota in other units is fine', async () => {
    const res = await api(
      ctx.admin,
      'POST',
      '/cluster-queues',
      cq({ name: 'equal', cohort: 'c', quota: { memory: '1Gi' }, lendingLimit: { memory: '1024Mi' } }),
    );
    assertStatus(res, 201);
  });
});

void describe('references, duplicates and conflicts', () => {
  runRows([
    bad(
      'project on a missing queue',
      'POST',
      '/projects',
      { name: 'orphan', clusterQueue: 'nope' },
      /cluster queue "nope" does not exist/,
      422,
      'unprocessable',
    ),
    bad(
      'moving a project to a missing queue',
      'PATCH',
      '/projects/p1',
      { clusterQueue: 'nope' },
      /cluster queue "nope" does not exist/,
      422,
      'unprocessable',
    ),
    bad('duplicate user', 'POST', '/users', { name: 'bob' }, /user "bob" already exists/, 409, 'conflict'),
    bad(
      'duplicate queue',
      'POST',
      '/cluster-queues',
      { name: 'q1' },
      /cluster queue "q1" already exists/,
      409,
      'conflict',
    ),
    bad(
      'duplicate project',
      'POST',
      '/projects',
      { name: 'p1', clusterQueue: 'q1' },
      /project "p1" already exists/,
      409,
      'conflict',
    ),
    bad(
      'deleting a queue in use',
      'DELETE',
      '/cluster-queues/q1',
      undefined,
      /cluster queue "q1" is used by project p1; move or delete them first/,
      409,
      'conflict',
    ),
    bad(
      'deleting yourself',
      'DELETE',
      '/users/admin',
      undefined,
      /you cannot delete yourself/,
      409,
      'conflict',
    ),
    bad(
      'unknown user as member',
      'PUT',
      '/projects/p1/members/nobody',
      { role: 'viewer' },
      /user "nobody" not found/,
      404,
      'not_found',
    ),
    bad(
      'removing a non-member',
      'DELETE',
      '/projects/p1/members/bob',
      undefined,
      /user "bob" is not a member of project "p1"/,
      404,
      'not_found',
    ),
    bad(
      'removing an unknown user',
      'DELETE',
      '/projects/p1/members/nobody',
      undefined,
      /user "nobody" not found/,
      404,
      'not_found',
    ),
    bad(
      'revoking a privilege not held',
      'DELETE',
      '/projects/p1/privileges/target.gpu',
      undefined,
      /does not hold privilege "target.gpu"/,
      404,
      'not_found',
    ),
    bad(
      'token for a missing user',
      'POST',
      '/users/nobody/tokens',
      {},
      /user "nobody" not found/,
      404,
      'not_found',
    ),
    bad('missing user', 'GET', '/users/nobody', undefined, /user "nobody" not found/, 404, 'not_found'),
    bad(
      'deleting a missing user',
      'DELETE',
      '/users/nobody',
      undefined,
      /user "nobody" not found/,
      404,
      'not_found',
    ),
    bad(
      'missing queue',
      'GET',
      '/cluster-queues/nope',
      undefined,
      /cluster queue "nope" not found/,
      404,
      'not_found',
    ),
    bad(
      'patching a missing queue',
      'PATCH',
      '/cluster-queues/nope',
      {},
      /cluster queue "nope" not found/,
      404,
      'not_found',
    ),
    bad(
      'deleting a missing queue',
      'DELETE',
      '/cluster-queues/nope',
      undefined,
      /cluster queue "nope" not found/,
      404,
      'not_found',
    ),
    bad('missing project', 'GET', '/projects/nope', undefined, /project "nope" not found/, 404, 'not_found'),
    bad(
      'patching a missing project',
      'PATCH',
      '/projects/nope',
      {},
      /project "nope" not found/,
      404,
      'not_found',
    ),
    bad(
      'deleting a missing project',
      'DELETE',
      '/projects/nope',
      undefined,
      /project "nope" not found/,
      404,
      'not_found',
    ),
    bad(
      'member of a missing project',
      'PUT',
      '/projects/nope/members/bob',
      { role: 'viewer' },
      /project "nope" not found/,
      404,
      'not_found',
    ),
    bad(
      'privilege of a missing project',
      'PUT',
      '/projects/nope/privileges/target.gpu',
      undefined,
      /project "nope" not found/,
      404,
      'not_found',
    ),
  ]);

  void test('the 409 for a queue in use names every project, and a few more as a count', async () => {
    await createQueue(api, ctx.admin, 'busy');
    for (const n of ['b-1', 'b-2']) await createProject(api, ctx.admin, n, 'busy');
    assertError(
      await api(ctx.admin, 'DELETE', '/cluster-queues/busy'),
      409,
      'conflict',
      /used by projects b-1, b-2;/,
    );
    for (let i = 3; i <= 12; i++) await createProject(api, ctx.admin, `b-${i}`, 'busy');
    const res = await api<ErrorBody>(ctx.admin, 'DELETE', '/cluster-queues/busy');
    assertError(res, 409, 'conflict', /and 2 more/);
    // After the projects move away, the queue can go.
    for (let i = 1; i <= 12; i++)
      assertStatus(await api(ctx.admin, 'PATCH', `/projects/b-${i}`, { clusterQueue: 'q1' }), 200);
    assertStatus(await api(ctx.admin, 'DELETE', '/cluster-queues/busy'), 204);
    assertError(await api(ctx.admin, 'GET', '/cluster-queues/busy'), 404, 'not_found');
  });

  void test('racing duplicates: exactly one wins, the rest get 409, none a 500', async () => {
    const race = async (method: string, path: string, body: unknown) => {
      const results = await Promise.all(Array.from({ length: 12 }, () => api(ctx.admin, method, path, body)));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [201, ...Array<number>(11).fill(409)], JSON.stringify(statuses));
      for (const r of results.filter((r) => r.status === 409))
        assertError(r, 409, 'conflict', /already exists/);
    };
    await race('POST', '/users', { name: 'racer' });
    await race('POST', '/cluster-queues', { name: 'race-q' });
    await race('POST', '/projects', { name: 'race-p', clusterQueue: 'race-q' });
  });

  void test('deleting a queue while projects are created on it never leaves a dangling project', async () => {
    await createQueue(api, ctx.admin, 'contested');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? api(ctx.admin, 'POST', '/projects', { name: `contest-${i}`, clusterQueue: 'contested' })
          : api(ctx.admin, 'DELETE', '/cluster-queues/contested'),
      ),
    );
    for (const r of results) assert.ok([201, 204, 404, 409, 422].includes(r.status), `${r.status} ${r.text}`);
    const queueExists = (await api(ctx.admin, 'GET', '/cluster-queues/contested')).status === 200;
    const projects = (await api<{ name: string; clusterQueue: string }[]>(ctx.admin, 'GET', '/projects'))
      .body;
    const onIt = projects.filter((p) => p.clusterQueue === 'contested');
    assert.ok(queueExists || onIt.length === 0, 'no project points at a deleted queue');
    assert.equal(onIt.length, results.filter((r, i) => i % 2 === 0 && r.status === 201).length);
  });

  void test('granting a privilege twice is idempotent', async () => {
    await createProject(api, ctx.admin, 'twice', 'q1');
    for (let i = 0; i < 2; i++) {
      const res = await api<{ privileges: string[] }>(
        ctx.admin,
        'PUT',
        '/projects/twice/privileges/resource.db',
      );
      assertStatus(res, 200);
      assert.deepEqual(res.body.privileges, ['resource.db']);
    }
  });
});

void describe('routes', () => {
  runRows([
    bad('unknown route', 'GET', '/nope', undefined, /no route GET \/api\/v1\/nope/, 404, 'not_found'),
    bad(
      'unknown nested route',
      'GET',
      '/projects/p1/nope',
      undefined,
      /no route GET \/api\/v1\/projects\/p1\/nope/,
      404,
      'not_found',
    ),
    bad('wrong method', 'PUT', '/projects', {}, /no route PUT \/api\/v1\/projects/, 404, 'not_found'),
  ]);

  void test('unknown routes are 404 with or without a token, outside the prefix too', async () => {
    assertError(await api(undefined, 'GET', '/nope'), 404, 'not_found', /no route/);
    const res = await fetch(`${ctx.server.url}/nowhere?x=1`);
    assert.equal(res.status, 404);
    const body = (await res.json()) as ErrorBody;
    assert.equal(body.error.code, 'not_found');
    assert.equal(body.error.message, 'no route GET /nowhere');
  });

  void test('a path with bad percent-encoding is a 400 in the error shape', async () => {
    assertError(await api(ctx.admin, 'GET', '/projects/%zz'), 400, 'bad_request', /malformed request/);
    assertError(await api(ctx.admin, 'GET', '/projects/%E0%A4%A'), 400, 'bad_request');
  });

  void test('long names in a path reach the schema; absurd ones are refused in the error shape', async () => {
    assertError(await api(ctx.admin, 'GET', `/projects/${'a'.repeat(200)}`), 404, 'not_found', /not found/);
    assertError(
      await api(ctx.admin, 'GET', `/cluster-queues/${'a'.repeat(254)}`),
      400,
      'bad_request',
      /"name" must NOT have more than 253 characters/,
    );
    assertError(await api(ctx.admin, 'GET', `/users/${'a'.repeat(600)}`), 400, 'bad_request');
  });

  void test('a token request without a body uses the default label', async () => {
    const res = await api<{ name: string; token: string }>(ctx.admin, 'POST', '/users/bob/tokens');
    assertStatus(res, 201);
    assert.equal(res.body.name, 'bob');
    assert.equal((await api<{ name: string }>(res.body.token, 'GET', '/whoami')).body.name, 'bob');
  });
});
