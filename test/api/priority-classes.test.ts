/**
 * Priority classes over the real API: who may define them, what input is refused, and how a
 * class name given at submission becomes the job's priority and decides admission order.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { waitDone } from '../helpers/jobs.js';
import {
  assertError,
  assertStatus,
  createProject,
  createQueue,
  makeWorld,
  useServer,
  type World,
} from './fixtures.js';

interface PriorityClassBody {
  name: string;
  value: number;
  description: string;
  createdAt: string;
}

interface JobBody {
  id: number;
  state: string;
  priority: number;
  priorityClass: string | null;
  admittedAt: string | null;
}

let world: World;
const ctx = useServer(async () => {
  world = await makeWorld(api, ctx.admin, 'default');
  await world.project('ml');
  for (const [name, value] of [
    ['high', 1000],
    ['low', -100],
  ] as const) {
    assertStatus(await api(ctx.admin, 'POST', '/priority-classes', { name, value }), 201, `create ${name}`);
  }
});
const { api } = ctx;

describe('defining priority classes', () => {
  test('an admin creates one; it is listed highest first and readable by any user', async () => {
    const res = await api<PriorityClassBody>(ctx.admin, 'POST', '/priority-classes', {
      name: 'urgent',
      value: 5000,
      description: 'drop everything',
    });
    assertStatus(res, 201);
    assert.equal(res.body.name, 'urgent');
    assert.equal(res.body.value, 5000);
    assert.equal(res.body.description, 'drop everything');
    assert.ok(!Number.isNaN(Date.parse(res.body.createdAt)));

    for (const actor of ['admin', 'owner', 'viewer', 'outsider'] as const) {
      const list = await api<PriorityClassBody[]>(world.tokens[actor], 'GET', '/priority-classes');
      assertStatus(list, 200, actor);
      const names = list.body.map((c) => c.name);
      assert.deepEqual(
        names.filter((n) => ['urgent', 'high', 'low'].includes(n)),
        ['urgent', 'high', 'low'],
        actor,
      );
      const one = await api<PriorityClassBody>(world.tokens[actor], 'GET', '/priority-classes/high');
      assertStatus(one, 200, actor);
      assert.equal(one.body.value, 1000);
    }
  });

  test('only admins create or delete; everyone needs a token', async () => {
    for (const actor of ['owner', 'member', 'viewer', 'outsider'] as const) {
      const token = world.tokens[actor];
      assertError(
        await api(token, 'POST', '/priority-classes', { name: `x-${actor}`, value: 1 }),
        403,
        'forbidden',
        /only admins can create priority classes/,
        actor,
      );
      assertError(
        await api(token, 'DELETE', '/priority-classes/high'),
        403,
        'forbidden',
        /only admins can delete priority classes/,
        actor,
      );
    }
    assertError(await api(undefined, 'GET', '/priority-classes'), 401, 'unauthorized');
    assertError(
      await api(undefined, 'POST', '/priority-classes', { name: 'n', value: 1 }),
      401,
      'unauthorized',
    );
    // Nothing of the refused requests landed.
    assertStatus(await api(ctx.admin, 'GET', '/priority-classes/high'), 200);
    assertError(await api(ctx.admin, 'GET', '/priority-classes/x-owner'), 404, 'not_found');
  });

  test('refuses bad input with 400, duplicates with 409, missing ones with 404', async () => {
    const bad: [unknown, RegExp][] = [
      [{ name: 'Big', value: 1 }, /DNS label/],
      [{ name: '-x', value: 1 }, /DNS label/],
      [{ name: '100', value: 1 }, /must not be a number/],
      [{ name: 'half', value: 1.5 }, /integer/],
      [{ name: 'huge', value: 1_000_000_001 }, /1000000000/],
      [{ name: 'tiny', value: -1_000_000_001 }, /-1000000000/],
      [{ name: 'text', value: '5' }, /integer/],
      [{ name: 'novalue' }, /value/],
      [{ value: 3 }, /name/],
      [{ name: 'extra', value: 1, globalDefault: true }, /globalDefault/],
    ];
    for (const [body, message] of bad) {
      assertError(
        await api(ctx.admin, 'POST', '/priority-classes', body),
        400,
        'bad_request',
        message,
        JSON.stringify(body),
      );
    }
    assertError(
      await api(ctx.admin, 'POST', '/priority-classes', { name: 'high', value: 7 }),
      409,
      'conflict',
      /priority class "high" already exists/,
    );
    assert.equal((await api<PriorityClassBody>(ctx.admin, 'GET', '/priority-classes/high')).body.value, 1000);
    assertError(
      await api(ctx.admin, 'GET', '/priority-classes/nope'),
      404,
      'not_found',
      /priority class "nope" not found/,
    );
    assertError(
      await api(ctx.admin, 'DELETE', '/priority-classes/nope'),
      404,
      'not_found',
      /"nope" not found/,
    );
  });

  test('the extreme values are accepted', async () => {
    for (const [name, value] of [
      ['ceiling', 1_000_000_000],
      ['floor', -1_000_000_000],
    ] as const) {
      const res = await api<PriorityClassBody>(ctx.admin, 'POST', '/priority-classes', { name, value });
      assertStatus(res, 201, name);
      assert.equal(res.body.value, value);
      assertStatus(await api(ctx.admin, 'DELETE', `/priority-classes/${name}`), 204, name);
      assertError(await api(ctx.admin, 'GET', `/priority-classes/${name}`), 404, 'not_found');
    }
  });
});

describe('priority at submission', () => {
  const submit = (body: Record<string, unknown>, token = world.tokens.member) =>
    api<JobBody>(token, 'POST', '/projects/ml/jobs', { command: ['true'], ...body });

  test('a class name becomes its value; the class is kept on the job', async () => {
    const res = await submit({ priority: 'high' });
    assertStatus(res, 201);
    assert.equal(res.body.priority, 1000);
    assert.equal(res.body.priorityClass, 'high');
    const plain = await submit({ priority: 7 });
    assertStatus(plain, 201);
    assert.equal(plain.body.priority, 7);
    assert.equal(plain.body.priorityClass, null);
    const none = await submit({});
    assert.equal(none.body.priority, 0);
    assert.equal(none.body.priorityClass, null);
    for (const id of [res.body.id, plain.body.id, none.body.id])
      await waitDone(ctx.server.api, ctx.admin, id);
    const after = await api<JobBody>(ctx.admin, 'GET', `/jobs/${res.body.id}`);
    assert.equal(after.body.priority, 1000);
    assert.equal(after.body.priorityClass, 'high');
  });

  test('an unknown class is a 422 naming the known ones; a bad type is a 400', async () => {
    const res = await submit({ priority: 'hihg' });
    assertError(res, 422, 'unprocessable', /unknown priority class "hihg"/);
    assertError(res, 422, 'unprocessable', /known: .*high \(1000\).*low \(-100\)/);
    assertError(await submit({ priority: 2.5 }), 400, 'bad_request');
    assertError(await submit({ priority: true }), 400, 'bad_request');
    assertError(await submit({ priority: '' }), 400, 'bad_request');
    assertError(await submit({ priority: 1_000_000_001 }), 400, 'bad_request');
  });

  test('deleting a class leaves the jobs that used it as they were', async () => {
    assertStatus(await api(ctx.admin, 'POST', '/priority-classes', { name: 'fleeting', value: 42 }), 201);
    const job = await submit({ priority: 'fleeting' });
    assertStatus(job, 201);
    assertStatus(await api(ctx.admin, 'DELETE', '/priority-classes/fleeting'), 204);
    const after = await api<JobBody>(ctx.admin, 'GET', `/jobs/${job.body.id}`);
    assert.equal(after.body.priority, 42);
    assert.equal(after.body.priorityClass, 'fleeting');
    assertError(
      await submit({ priority: 'fleeting' }),
      422,
      'unprocessable',
      /unknown priority class "fleeting"/,
    );
    await waitDone(ctx.server.api, ctx.admin, job.body.id);
  });

  test('in a held queue, jobs are admitted by priority once it resumes', async () => {
    await createQueue(api, ctx.admin, 'one-by-one', { quota: { jobs: 1 }, stopPolicy: 'Hold' });
    await createProject(api, ctx.admin, 'ranked', 'one-by-one');
    const post = async (name: string, priority?: number | string) => {
      const res = await api<JobBody>(ctx.admin, 'POST', '/projects/ranked/jobs', {
        name,
        command: ['true'],
        ...(priority === undefined ? {} : { priority }),
      });
      assertStatus(res, 201, name);
      assert.equal(res.body.state, 'queued', name);
      return res.body;
    };
    // Submitted lowest first, so creation order alone would give the opposite of what we expect.
    const batch = await post('batch', 'low');
    const plain = await post('plain');
    const mid = await post('mid', 10);
    const high = await post('high', 'high');
    assert.deepEqual([batch.priority, plain.priority, mid.priority, high.priority], [-100, 0, 10, 1000]);
    const pending = await api<{ id: number }[]>(ctx.admin, 'GET', '/cluster-queues/one-by-one/pending');
    assertStatus(pending, 200);
    assert.deepEqual(
      pending.body.map((e) => e.id),
      [high.id, mid.id, plain.id, batch.id],
    );

    assertStatus(await api(ctx.admin, 'PATCH', '/cluster-queues/one-by-one', { stopPolicy: 'None' }), 200);
    const done = [];
    for (const j of [high, mid, plain, batch]) done.push(await waitDone(ctx.server.api, ctx.admin, j.id));
    const admitted = await Promise.all(
      done.map(async (j) => (await api<JobBody>(ctx.admin, 'GET', `/jobs/${j.id}`)).body.admittedAt),
    );
    assert.ok(admitted.every((a) => a !== null));
    // One job at a time (jobs: 1), so each was admitted only after the one before it ended.
    const times = admitted.map((a) => Date.parse(a));
    assert.deepEqual(
      [...times].sort((a, b) => a - b),
      times,
      `admitted in priority order: ${admitted.join(', ')}`,
    );
    assert.equal(new Set(times).size, times.length);
  });
});
