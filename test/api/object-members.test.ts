/**
 * Every operation of the served OpenAPI document, called with the names every plain JavaScript
 * object has (`constructor`, `hasOwnProperty`, `toString`, `__proto__`, …) wherever a name goes:
 * path parameters, query parameters, body keys and values, the keys of requests, quotas and env. One such key once made the usage rollups text and every `GET /usage` a 500 (issue #40).
 * No answer may be a 5xx, and afterwards the installation answers its reads and runs a job in a
 * project, queue and user so named, whose usage adds up.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { OBJECT_MEMBERS } from '../../src/domain/names.js';
import { waitDone } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { useServer } from './fixtures.js';

const ctx = useServer(undefined, { config: localFactoryConfig(2) });
const { api } = ctx;

interface Operation {
  parameters?: { name: string; in: 'path' | 'query' }[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
}
type Doc = { paths: Record<string, Record<string, Operation>> };

/** Operations that hold a request open (a live stream): called, they would not answer. */
const HELD_OPEN = new Set(['GET /api/v1/stream']);

/**
 * Bodies naming `m` everywhere a name or a key goes, in the fields the operation's schema has
 * (an unknown field would be refused before the rest is looked at): those alone, and with `m`
 * itself as one more key.
 */
function bodies(m: string, op: Operation): string[] {
  const keyed = (v: unknown) => Object.fromEntries([[m, v]]);
  const fields: Record<string, unknown> = {
    name: m,
    command: ['true'],
    requests: keyed('1'),
    quota: keyed('1'),
    borrowingLimit: keyed('1'),
    lendingLimit: keyed('1'),
    env: keyed('x'),
    cohort: m,
    clusterQueue: m,
    description: m,
    role: 'member',
  };
  const known = Object.keys(op.requestBody?.content?.['application/json']?.schema?.properties ?? {});
  // Own keys, `__proto__` included, as a client's JSON has them.
  const given = Object.entries(fields).filter(([k]) => known.includes(k));
  return [JSON.stringify(Object.fromEntries(given)), JSON.stringify(Object.fromEntries([...given, [m, m]]))];
}

void test('no operation answers a 5xx to the names every object has; the installation stays whole', async () => {
  const doc = (await api<Doc>(undefined, 'GET', '/openapi.json')).body;
  const failures: string[] = [];
  let calls = 0;
  for (const m of OBJECT_MEMBERS)
    for (const [template, operations] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(operations)) {
        if (HELD_OPEN.has(`${method.toUpperCase()} ${template}`)) continue;
        // Named so in the path; and, for a write with a body, the default project's or queue's.
        for (const named of op.requestBody && method !== 'delete' ? [m, 'default'] : [m]) {
          const path = template.replace(/\{[^}]+\}/g, encodeURIComponent(named)).replace(/^\/api\/v1/, '');
          const query = new URLSearchParams([[m, m]]);
          for (const p of op.parameters ?? []) if (p.in === 'query') query.set(p.name, m);
          for (const body of op.requestBody ? bodies(m, op) : [undefined]) {
            const res = await api(ctx.admin, method.toUpperCase(), `${path}?${query.toString()}`, body);
            calls++;
            if (res.status >= 500)
              failures.push(
                `${method.toUpperCase()} ${path} ${body ?? ''}: ${res.status} ${res.text.slice(0, 200)}`,
              );
          }
        }
      }
  assert.deepEqual(failures, [], `${failures.length} of ${calls} calls answered 5xx`);

  // Named so, where the rules allow the name (constructor is a DNS label and a user name).
  const ok = async (method: string, path: string, b?: unknown) => {
    const r = await api(ctx.admin, method, path, b);
    assert.ok(r.status < 300 || r.status === 409, `${method} ${path}: ${r.status} ${r.text}`);
  };
  await ok('POST', '/cluster-queues', { name: 'constructor', quota: { cpu: '2', memory: '1Gi' } });
  await ok('POST', '/projects', { name: 'constructor', clusterQueue: 'constructor' });
  await ok('POST', '/users', { name: 'constructor' });
  await ok('PUT', '/projects/constructor/members/constructor', { role: 'member' });
  const job = await api<{ id: number }>(ctx.admin, 'POST', '/projects/constructor/jobs', {
    command: ['true'],
    requests: { cpu: '1' },
    env: { constructor: 'x', toString: 'y' },
  });
  assert.equal(job.status, 201, job.text);
  assert.equal((await waitDone(ctx.server.api, ctx.admin, job.body.id)).state, 'succeeded');
  for (const read of ['/users', '/projects', '/cluster-queues', '/workers', '/targets', '/metrics'])
    assert.equal((await api(ctx.admin, 'GET', read)).status, 200, read);
  for (const by of ['project', 'user', 'queue']) {
    const usage = await api<{ rows: { key: string; resourceHours: Record<string, number> }[] }>(
      ctx.admin,
      'GET',
      `/usage?by=${by}`,
    );
    assert.equal(usage.status, 200, `${by}: ${usage.text}`);
    for (const row of usage.body.rows)
      for (const [resource, hours] of Object.entries(row.resourceHours))
        assert.equal(typeof hours, 'number', `${by} ${row.key} ${resource}: ${String(hours)}`);
  }
});
