/** The shapes the API answers with, and how updates combine with what is stored. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertStatus, createQueue, useServer, type ProjectBody, type QueueBody } from './fixtures.js';

const ctx = useServer();
const { api } = ctx;

void test('first start made queue "default" and project "default" bound to it', async () => {
  const q = await api<QueueBody>(ctx.admin, 'GET', '/cluster-queues/default');
  assertStatus(q, 200);
  assert.ok(Number(q.body.quota.cpu) >= 1);
  assert.match(q.body.quota.memory ?? '', /^\d+Gi$/);
  const p = await api<ProjectBody>(ctx.admin, 'GET', '/projects/default');
  assertStatus(p, 200);
  assert.equal(p.body.clusterQueue, 'default');
});

void test('a new user gets a fresh token, shown once', async () => {
  const res = await api<{ name: string; admin: boolean; token: string; createdAt: string }>(
    ctx.admin,
    'POST',
    '/users',
    {
      name: 'newbie',
    },
  );
  assertStatus(res, 201);
  assert.equal(res.body.admin, false);
  assert.match(res.body.token, /^berth_[A-Za-z0-9_-]{43}$/);
  assert.ok(!Number.isNaN(Date.parse(res.body.createdAt)));
  const shown = await api<Record<string, unknown>>(ctx.admin, 'GET', '/users/newbie');
  assertStatus(shown, 200);
  assert.equal(shown.body.token, undefined, 'the token is never shown again');
  const who = await api<{ kind: string; name: string; admin: boolean }>(res.body.token, 'GET', '/whoami');
  assert.deepEqual([who.body.kind, who.body.name, who.body.admin], ['user', 'newbie', false]);
});

void test('a queue answers with its spec, defaults filled, and its live figures', async () => {
  const res = await api<QueueBody>(ctx.admin, 'POST', '/cluster-queues', {
    name: 'shape',
    quota: { cpu: 4 },
  });
  assertStatus(res, 201);
  const { createdAt, updatedAt, usage, borrowed, pending, admitted, running, ...spec } =
    res.body as QueueBody & {
      createdAt: string;
      updatedAt: string;
      borrowed: Record<string, string>;
      admitted: number;
      running: number;
    };
  assert.deepEqual(spec, {
    name: 'shape',
    quota: { cpu: '4' },
    cohort: null,
    borrowingLimit: {},
    lendingLimit: {},
    queueingStrategy: 'BestEffortFIFO',
    preemption: {
      withinClusterQueue: 'Never',
      reclaimWithinCohort: 'Never',
      borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
    },
    stopPolicy: 'None',
    maxQueuedPerProject: null,
  });
  assert.equal(createdAt, updatedAt);
  assert.ok(!Number.isNaN(Date.parse(createdAt)));
  // Nothing runs yet: no usage, nothing borrowed, pending or admitted.
  for (const amount of [...Object.values(usage), ...Object.values(borrowed)]) assert.equal(amount, '0');
  assert.deepEqual([pending, admitted, running], [0, 0, 0]);
  const list = await api<QueueBody[]>(ctx.admin, 'GET', '/cluster-queues');
  assert.deepEqual(
    list.body.map((q) => q.name),
    [...list.body.map((q) => q.name)].sort(),
    'listed by name',
  );
});

void test('a queue patch replaces the given fields and keeps the rest', async () => {
  await createQueue(api, ctx.admin, 'patched', {
    cohort: 'pool',
    quota: { cpu: '8', memory: '16Gi' },
    stopPolicy: 'Hold',
  });
  const res = await api<QueueBody>(ctx.admin, 'PATCH', '/cluster-queues/patched', {
    quota: { cpu: '2' },
    preemption: { reclaimWithinCohort: 'Any' },
  });
  assertStatus(res, 200);
  assert.deepEqual(res.body.quota, { cpu: '2' });
  assert.equal(res.body.cohort, 'pool');
  assert.equal(res.body.stopPolicy, 'Hold');
  assert.deepEqual(res.body.preemption, {
    withinClusterQueue: 'Never',
    reclaimWithinCohort: 'Any',
    borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
  });
  const again = await api<QueueBody>(ctx.admin, 'GET', '/cluster-queues/patched');
  assert.deepEqual(again.body, res.body);
});

void test('a project answers with its fields; tags are de-duplicated; patches keep what they omit', async () => {
  const created = await api<ProjectBody>(ctx.admin, 'POST', '/projects', {
    name: 'shaped',
    clusterQueue: 'default',
    tags: ['ml', 'ml', 'team:a'],
  });
  assertStatus(created, 201);
  assert.equal(created.body.description, '');
  assert.equal(created.body.active, true);
  assert.deepEqual(created.body.tags, ['ml', 'team:a']);
  assert.deepEqual(created.body.members, []);
  assert.deepEqual(created.body.privileges, []);
  const patched = await api<ProjectBody>(ctx.admin, 'PATCH', '/projects/shaped', {
    description: 'about',
    active: false,
  });
  assertStatus(patched, 200);
  assert.deepEqual(
    [patched.body.description, patched.body.active, patched.body.tags, patched.body.clusterQueue],
    ['about', false, ['ml', 'team:a'], 'default'],
  );
  const cleared = await api<ProjectBody>(ctx.admin, 'PATCH', '/projects/shaped', {
    tags: [],
    description: '',
  });
  assert.deepEqual([cleared.body.tags, cleared.body.description, cleared.body.active], [[], '', false]);
});
