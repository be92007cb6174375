/**
 * Random bodies against every write endpoint: whatever arrives, the answer is a success or a 4xx in
 * the contract's error shape, never a 500; a success leaves something that reads back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { OBJECT_MEMBERS } from '../../src/domain/names.js';
import { assertError, assertStatus, createProject, createQueue, createUser, useServer } from './fixtures.js';

const ctx = useServer(async () => {
  await createQueue(api, ctx.admin, 'q1', { cohort: 'pool' });
  await createProject(api, ctx.admin, 'p1', 'q1');
  await createUser(api, ctx.admin, 'bob');
});
const { api } = ctx;

const RUNS = 120;

const CODES: Record<number, string> = {
  400: 'bad_request',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
};

/** Sends `body` and checks the answer is a success or a well-formed 4xx. */
async function probe(method: string, path: string, body: unknown): Promise<number> {
  const res = await api(ctx.admin, method, path, body);
  const label = `${method} ${path} ${JSON.stringify(body)?.slice(0, 200)}`;
  if (res.status >= 400) {
    const code = CODES[res.status];
    assert.ok(code, `${label}: unexpected ${res.status} ${res.text}`);
    assertError(res, res.status, code, undefined, label);
  } else {
    assert.ok([200, 201, 204].includes(res.status), `${label}: ${res.status}`);
  }
  return res.status;
}

/** What every plain object has (`constructor`, `hasOwnProperty`, `__proto__`, …): keys and names that once reached inherited members (issue #40). */
const member = fc.constantFrom(...OBJECT_MEMBERS);
const name = fc.oneof(
  fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?$/),
  fc.string({ maxLength: 70 }),
  fc.constantFrom('q1', 'p1', 'bob', 'admin', 'default', 'A', '-', 'a'.repeat(64)),
  member,
);
const quantity = fc.oneof(
  fc.stringMatching(/^[0-9]{0,4}(\.[0-9]{0,3})?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|e-?[0-9]{1,3})?$/),
  fc.string({ maxLength: 10 }),
  fc.double(),
  fc.integer(),
  fc.jsonValue(),
);
const resource = fc.oneof(
  fc.constantFrom('cpu', 'memory', 'jobs', 'nvidia.com/gpu', 'bad name', '', '/x'),
  fc.string({ maxLength: 8 }),
  member,
);
const quantities = fc.oneof(fc.dictionary(resource, quantity, { maxKeys: 4 }), fc.jsonValue());
const anything = fc.oneof(fc.jsonValue(), fc.string(), fc.constant(null));

const queueFields = {
  quota: quantities,
  cohort: fc.oneof(name, fc.constant(null), anything),
  borrowingLimit: quantities,
  lendingLimit: quantities,
  queueingStrategy: fc.oneof(fc.constantFrom('StrictFIFO', 'BestEffortFIFO'), anything),
  preemption: fc.oneof(
    fc.record(
      {
        withinClusterQueue: fc.oneof(fc.constantFrom('Never', 'LowerPriority'), anything),
        reclaimWithinCohort: fc.oneof(fc.constantFrom('Never', 'Any'), anything),
        foo: anything,
      },
      { requiredKeys: [] },
    ),
    anything,
  ),
  stopPolicy: fc.oneof(fc.constantFrom('None', 'Hold', 'HoldAndDrain'), anything),
  extra: anything,
};

const projectFields = {
  description: fc.oneof(fc.string(), anything),
  tags: fc.oneof(fc.array(fc.oneof(name, fc.string())), anything),
  clusterQueue: fc.oneof(fc.constantFrom('q1', 'default', 'nope'), name, anything),
  active: fc.oneof(fc.boolean(), anything),
  extra: anything,
};

const opts = { numRuns: RUNS };

void test('POST /cluster-queues', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.record({ name, ...queueFields }, { requiredKeys: [] }), anything),
      async (body) => {
        if ((await probe('POST', '/cluster-queues', body)) === 201) {
          assertStatus(
            await api(ctx.admin, 'GET', `/cluster-queues/${(body as { name: string }).name}`),
            200,
          );
        }
      },
    ),
    opts,
  );
});

void test('PATCH /cluster-queues/q1', async () => {
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.record(queueFields, { requiredKeys: [] }), anything), async (body) => {
      await probe('PATCH', '/cluster-queues/q1', body);
      assertStatus(await api(ctx.admin, 'GET', '/cluster-queues/q1'), 200);
    }),
    opts,
  );
});

void test('POST /projects and PATCH /projects/p1', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.record({ name, ...projectFields }, { requiredKeys: [] }), anything),
      fc.oneof(fc.record(projectFields, { requiredKeys: [] }), anything),
      async (create, patch) => {
        if ((await probe('POST', '/projects', create)) === 201) {
          assertStatus(await api(ctx.admin, 'GET', `/projects/${(create as { name: string }).name}`), 200);
        }
        await probe('PATCH', '/projects/p1', patch);
        assertStatus(await api(ctx.admin, 'GET', '/projects/p1'), 200);
      },
    ),
    opts,
  );
});

void test('users, members and privileges', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        fc.record({ name, admin: fc.oneof(fc.boolean(), anything), extra: anything }, { requiredKeys: [] }),
        anything,
      ),
      fc.oneof(
        fc.record(
          { role: fc.oneof(fc.constantFrom('viewer', 'member', 'owner'), anything) },
          { requiredKeys: [] },
        ),
        anything,
      ),
      fc.stringMatching(/^[a-zA-Z0-9._/-]{1,20}$/),
      async (user, member, privilege) => {
        await probe('POST', '/users', user);
        await probe('PUT', '/projects/p1/members/bob', member);
        await probe('POST', '/users/bob/tokens', user);
        const path = `/projects/p1/privileges/${encodeURIComponent(privilege)}`;
        await probe('PUT', path, undefined);
        await probe('DELETE', path, undefined);
      },
    ),
    opts,
  );
});
