/** The public endpoints: /health and the OpenAPI document. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertStatus, useServer } from './fixtures.js';

interface Operation {
  summary?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
}
interface OpenApiDoc {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, { type: string; scheme: string }> };
  security: Record<string, unknown>[];
}

const ctx = useServer();
const { api } = ctx;

void test('/health needs no token, says ok, and that this one server leads', async () => {
  const variants: Record<string, string>[] = [{}, { authorization: 'Bearer nonsense' }];
  for (const headers of variants) {
    const res = await api<{ status: string; version: string; role: string; term: number; leader: string }>(
      undefined,
      'GET',
      '/health',
      undefined,
      headers,
    );
    assertStatus(res, 200);
    assert.equal(res.body.status, 'ok');
    assert.match(res.body.version, /^\d+\.\d+\.\d+/);
    assert.equal(res.body.role, 'leader', 'a single server (on either store) leads');
    assert.ok(res.body.term >= 1);
    assert.equal(res.body.leader, ctx.server.url);
  }
});

void test('the OpenAPI document is public and lists every route with its method', async () => {
  const res = await api<OpenApiDoc>(undefined, 'GET', '/openapi.json');
  assertStatus(res, 200);
  const doc = res.body;
  assert.match(doc.openapi, /^3\./);
  assert.equal(doc.info.title, 'berth');
  assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer' });
  assert.deepEqual(doc.security, [{ bearer: [] }]);
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const expected = [
    'GET /api/v1/health',
    'GET /api/v1/whoami',
    'POST /api/v1/users',
    'GET /api/v1/users',
    'GET /api/v1/users/{name}',
    'DELETE /api/v1/users/{name}',
    'POST /api/v1/users/{name}/tokens',
    'POST /api/v1/cluster-queues',
    'GET /api/v1/cluster-queues',
    'GET /api/v1/cluster-queues/{name}',
    'PATCH /api/v1/cluster-queues/{name}',
    'DELETE /api/v1/cluster-queues/{name}',
    'POST /api/v1/projects',
    'GET /api/v1/projects',
    'GET /api/v1/projects/{name}',
    'PATCH /api/v1/projects/{name}',
    'DELETE /api/v1/projects/{name}',
    'PUT /api/v1/projects/{name}/members/{user}',
    'DELETE /api/v1/projects/{name}/members/{user}',
    'PUT /api/v1/projects/{name}/privileges/{privilege}',
    'DELETE /api/v1/projects/{name}/privileges/{privilege}',
  ];
  for (const op of expected) assert.ok(ops.includes(op), `${op} is documented`);
  assert.ok(!ops.some((op) => op.includes('openapi.json')), 'the document does not list itself');
  assert.deepEqual(doc.paths['/api/v1/health']?.get?.security, [], '/health is marked public');

  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      assert.ok(op.summary && op.summary.length > 0, `${method} ${path} has a summary`);
      for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])) {
        assert.ok(
          op.parameters?.some((p) => p.in === 'path' && p.name === name),
          `${method} ${path} documents parameter ${name}`,
        );
      }
    }
  }
  const createQueue = doc.paths['/api/v1/cluster-queues']?.post?.requestBody?.content['application/json'];
  assert.ok(createQueue?.schema.properties && 'quota' in createQueue.schema.properties);
  const createProject = doc.paths['/api/v1/projects']?.post?.requestBody?.content['application/json'];
  assert.ok(createProject?.schema.properties && 'clusterQueue' in createProject.schema.properties);
});

void test('every documented route of these families exists (none answers "no route")', async () => {
  const doc = (await api<OpenApiDoc>(undefined, 'GET', '/openapi.json')).body;
  const family =
    /^\/api\/v1\/(health|whoami|users|cluster-queues|projects)(\/\{name\}(\/tokens|\/(members|privileges)\/\{\w+\})?)?$/;
  const paths = Object.entries(doc.paths).filter(([path]) => family.test(path));
  assert.equal(paths.length, 11);
  for (const [path, methods] of paths) {
    for (const method of Object.keys(methods)) {
      const url = path.replace(/^\/api\/v1/, '').replace(/\{[^}]+\}/g, 'zz-missing');
      const verb = method.toUpperCase();
      const body = ['POST', 'PUT', 'PATCH'].includes(verb) ? {} : undefined;
      const res = await api<{ error?: { message: string } }>(ctx.admin, verb, url, body);
      assert.ok(res.status < 500, `${method} ${url}: ${res.text}`);
      assert.ok(!res.body.error?.message.startsWith('no route'), `${method} ${url}: ${res.text}`);
    }
  }
});
