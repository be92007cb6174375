/**
 * Role boundaries, table-driven: (actor, method, path, body) → expected status, for every
 * endpoint family. A refused request must leave the data exactly as it was; a non-member must not
 * be able to tell an existing project from a missing one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACTORS,
  assertError,
  assertStatus,
  createQueue,
  createUser,
  makeWorld,
  useServer,
  type Actor,
  type ErrorBody,
  type ProjectBody,
  type QueueBody,
  type World,
} from './fixtures.js';

type Expect = Record<Actor, number>;
const ACTOR_USER: Record<Actor, string> = {
  admin: 'admin',
  owner: 'olivia',
  member: 'mark',
  viewer: 'vera',
  outsider: 'otto',
};

const CODE_BY_STATUS: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found' };

let world: World;
const ctx = useServer(async () => {
  await createQueue(api, ctx.admin, 'q1');
  await createQueue(api, ctx.admin, 'q2');
  world = await makeWorld(api, ctx.admin, 'q1');
  await createUser(api, ctx.admin, 'extra');
});
const { api } = ctx;

async function adminView(name: string): Promise<ProjectBody | undefined> {
  const res = await api<ProjectBody>(ctx.admin, 'GET', `/projects/${name}`);
  if (res.status === 404) return undefined;
  assertStatus(res, 200, `admin reads ${name}`);
  return res.body;
}

interface ProjectRow {
  op: string;
  request: (project: string) => [method: string, path: string, body?: unknown];
  expect: Expect;
  /** Prepares the fresh project before the request (as admin). */
  setup?: (project: string) => Promise<void>;
  /** What a successful request must have changed (admin's view afterwards; undefined = gone). */
  effect: (after: ProjectBody | undefined, before: ProjectBody) => void;
}

const unchanged = (after: ProjectBody | undefined, before: ProjectBody) => assert.deepEqual(after, before);

const PROJECT_ROWS: ProjectRow[] = [
  {
    op: 'show',
    request: (p) => ['GET', `/projects/${p}`],
    expect: { admin: 200, owner: 200, member: 200, viewer: 200, outsider: 404 },
    effect: unchanged,
  },
  {
    op: 'set description',
    request: (p) => ['PATCH', `/projects/${p}`, { description: 'changed' }],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) => assert.equal(a?.description, 'changed'),
  },
  {
    op: 'set tags and active',
    request: (p) => ['PATCH', `/projects/${p}`, { tags: ['t1', 't2'], active: false }],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) => {
      assert.deepEqual(a?.tags, ['t1', 't2']);
      assert.equal(a?.active, false);
    },
  },
  {
    op: 'move to another queue',
    request: (p) => ['PATCH', `/projects/${p}`, { clusterQueue: 'q2' }],
    expect: { admin: 200, owner: 403, member: 403, viewer: 403, outsider: 404 },
    effect: (a) => assert.equal(a?.clusterQueue, 'q2'),
  },
  {
    op: 'name the same queue',
    request: (p) => ['PATCH', `/projects/${p}`, { clusterQueue: 'q1', description: 'same queue' }],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) => {
      assert.equal(a?.clusterQueue, 'q1');
      assert.equal(a?.description, 'same queue');
    },
  },
  {
    op: 'delete',
    request: (p) => ['DELETE', `/projects/${p}`],
    expect: { admin: 204, owner: 204, member: 403, viewer: 403, outsider: 404 },
    effect: (a) => assert.equal(a, undefined),
  },
  {
    op: 'add member',
    request: (p) => ['PUT', `/projects/${p}/members/extra`, { role: 'viewer' }],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) =>
      assert.deepEqual(
        a?.members?.find((m) => m.user === 'extra'),
        { user: 'extra', role: 'viewer' },
      ),
  },
  {
    op: 'change role',
    request: (p) => ['PUT', `/projects/${p}/members/vera`, { role: 'owner' }],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) =>
      assert.deepEqual(
        a?.members?.find((m) => m.user === 'vera'),
        { user: 'vera', role: 'owner' },
      ),
  },
  {
    op: 'remove member',
    request: (p) => ['DELETE', `/projects/${p}/members/mark`],
    expect: { admin: 200, owner: 200, member: 403, viewer: 403, outsider: 404 },
    effect: (a) =>
      assert.equal(
        a?.members?.find((m) => m.user === 'mark'),
        undefined,
      ),
  },
  {
    op: 'grant privilege',
    request: (p) => ['PUT', `/projects/${p}/privileges/target.gpu`],
    expect: { admin: 200, owner: 403, member: 403, viewer: 403, outsider: 403 },
    effect: (a) => assert.deepEqual(a?.privileges, ['target.gpu']),
  },
  {
    op: 'revoke privilege',
    setup: async (p) =>
      assertStatus(await api(ctx.admin, 'PUT', `/projects/${p}/privileges/target.gpu`), 200),
    request: (p) => ['DELETE', `/projects/${p}/privileges/target.gpu`],
    expect: { admin: 200, owner: 403, member: 403, viewer: 403, outsider: 403 },
    effect: (a) => assert.deepEqual(a?.privileges, []),
  },
];

void describe('projects: role boundaries', () => {
  for (const [i, row] of PROJECT_ROWS.entries()) {
    for (const actor of ACTORS) {
      const status = row.expect[actor];
      void test(`${row.op} as ${actor} → ${status}`, async () => {
        const name = `p${i}-${actor}`;
        await world.project(name);
        await row.setup?.(name);
        const before = (await adminView(name))!;
        const [method, path, body] = row.request(name);
        const res = await api(world.tokens[actor], method, path, body);
        if (status < 300) {
          assertStatus(res, status, `${actor} ${method} ${path}`);
          row.effect(await adminView(name), before);
        } else {
          assertError(res, status, CODE_BY_STATUS[status]!, undefined, `${actor} ${method} ${path}`);
          assert.deepEqual(await adminView(name), before, 'a refused request changes nothing');
        }
      });
    }
  }

  void test('a member sees its own role; an admin sees "admin"', async () => {
    await world.project('roles-shown');
    for (const actor of ['owner', 'member', 'viewer'] as const) {
      const res = await api<ProjectBody>(world.tokens[actor], 'GET', '/projects/roles-shown');
      assertStatus(res, 200);
      assert.equal(res.body.role, actor);
      assert.deepEqual(
        res.body.members?.map((m) => m.user),
        ['mark', 'olivia', 'vera'],
      );
    }
    const res = await api<ProjectBody>(ctx.admin, 'GET', '/projects/roles-shown');
    assert.equal(res.body.role, 'admin');
  });

  void test('only admins create projects', async () => {
    for (const actor of ACTORS) {
      const res = await api(world.tokens[actor], 'POST', '/projects', {
        name: `new-${actor}`,
        clusterQueue: 'q1',
      });
      if (actor === 'admin') assertStatus(res, 201);
      else assertError(res, 403, 'forbidden', /only admins can create projects/);
    }
    const list = await api<ProjectBody[]>(ctx.admin, 'GET', '/projects');
    assert.deepEqual(
      list.body.map((p) => p.name).filter((n) => n.startsWith('new-')),
      ['new-admin'],
    );
  });

  void test('a member whose role is too low is told which role is needed', async () => {
    await world.project('too-low');
    const res = await api(world.tokens.viewer, 'PATCH', '/projects/too-low', { description: 'x' });
    assertError(res, 403, 'forbidden', /needs role owner or higher; you are viewer/);
  });
});

void describe('projects: a non-member cannot tell a hidden project from a missing one', () => {
  const requests: [string, (p: string) => [string, string, unknown?]][] = [
    ['show', (p) => ['GET', `/projects/${p}`]],
    ['update', (p) => ['PATCH', `/projects/${p}`, { description: 'x' }]],
    ['move', (p) => ['PATCH', `/projects/${p}`, { clusterQueue: 'q2' }]],
    ['bad tag', (p) => ['PATCH', `/projects/${p}`, { tags: ['bad tag'] }]],
    ['delete', (p) => ['DELETE', `/projects/${p}`]],
    ['add member', (p) => ['PUT', `/projects/${p}/members/extra`, { role: 'viewer' }]],
    ['add unknown user', (p) => ['PUT', `/projects/${p}/members/nobody`, { role: 'viewer' }]],
    ['remove member', (p) => ['DELETE', `/projects/${p}/members/vera`]],
    ['remove non-member', (p) => ['DELETE', `/projects/${p}/members/extra`]],
    ['grant', (p) => ['PUT', `/projects/${p}/privileges/target.gpu`]],
    ['revoke', (p) => ['DELETE', `/projects/${p}/privileges/target.gpu`]],
  ];
  for (const [label, request] of requests) {
    void test(label, async () => {
      const hidden = `hidden-${label.replace(/ /g, '-')}`;
      const missing = `missing-${label.replace(/ /g, '-')}`;
      await world.project(hidden);
      const before = await adminView(hidden);
      const [method, path, body] = request(hidden);
      const a = await api<ErrorBody>(world.tokens.outsider, method, path, body);
      const [method2, path2, body2] = request(missing);
      const b = await api<ErrorBody>(world.tokens.outsider, method2, path2, body2);
      assert.ok(a.status >= 400 && a.status < 500, `${a.status} ${a.text}`);
      assert.equal(a.status, b.status, `${a.text} vs ${b.text}`);
      assert.equal(a.body.error.code, b.body.error.code);
      assert.equal(
        a.body.error.message.replaceAll(hidden, 'P'),
        b.body.error.message.replaceAll(missing, 'P'),
      );
      assert.deepEqual(await adminView(hidden), before);
    });
  }

  void test('project lists show members only their own projects', async () => {
    await world.project('listed-a');
    await world.project('listed-b');
    assertStatus(await api(ctx.admin, 'PUT', '/projects/listed-b/members/otto', { role: 'viewer' }), 200);
    const names = async (actor: Actor) => {
      const res = await api<ProjectBody[]>(world.tokens[actor], 'GET', '/projects');
      assertStatus(res, 200);
      return res.body.map((p) => p.name);
    };
    const all = await names('admin');
    assert.ok(all.includes('default') && all.includes('listed-a') && all.includes('listed-b'));
    assert.deepEqual(await names('outsider'), ['listed-b']);
    for (const actor of ['owner', 'member', 'viewer'] as const) {
      const mine = await names(actor);
      assert.ok(mine.includes('listed-a') && mine.includes('listed-b'));
      assert.ok(!mine.includes('default'), `${actor} is not a member of default`);
      // Every listed project is one the actor can open.
      for (const n of mine) assertStatus(await api(world.tokens[actor], 'GET', `/projects/${n}`), 200);
    }
    // And every project the outsider cannot open is absent from its list.
    for (const n of all.filter((n) => n !== 'listed-b')) {
      assertError(await api(world.tokens.outsider, 'GET', `/projects/${n}`), 404, 'not_found');
    }
  });

  void test('removing a member takes the project out of its view', async () => {
    await world.project('leaving');
    assertStatus(await api(world.tokens.viewer, 'GET', '/projects/leaving'), 200);
    assertStatus(await api(world.tokens.owner, 'DELETE', '/projects/leaving/members/vera'), 200);
    assertError(await api(world.tokens.viewer, 'GET', '/projects/leaving'), 404, 'not_found');
    const list = await api<ProjectBody[]>(world.tokens.viewer, 'GET', '/projects');
    assert.ok(!list.body.some((p) => p.name === 'leaving'));
  });
});

void describe('cluster queues: role boundaries', () => {
  const adminOnly: Expect = { admin: 0, owner: 403, member: 403, viewer: 403, outsider: 403 };
  for (const actor of ACTORS) {
    void test(`create, update and delete as ${actor}`, async () => {
      const token = world.tokens[actor];
      const fresh = `cq-${actor}`;
      const created = await api<QueueBody>(token, 'POST', '/cluster-queues', {
        name: fresh,
        quota: { cpu: '1' },
      });
      const existing = `cq-existing-${actor}`;
      await createQueue(api, ctx.admin, existing);
      const before = await api<QueueBody>(ctx.admin, 'GET', `/cluster-queues/${existing}`);
      const updated = await api<QueueBody>(token, 'PATCH', `/cluster-queues/${existing}`, {
        stopPolicy: 'Hold',
      });
      const unused = `cq-unused-${actor}`;
      await createQueue(api, ctx.admin, unused);
      const deleted = await api(token, 'DELETE', `/cluster-queues/${unused}`);
      const afterList = await api<QueueBody[]>(ctx.admin, 'GET', '/cluster-queues');
      const names = afterList.body.map((q) => q.name);
      if (actor === 'admin') {
        assertStatus(created, 201);
        assertStatus(updated, 200);
        assert.equal(updated.body.stopPolicy, 'Hold');
        assertStatus(deleted, 204);
        assert.ok(names.includes(fresh));
        assert.ok(!names.includes(unused));
      } else {
        assertError(created, adminOnly[actor], 'forbidden', /only admins can create cluster queues/);
        assertError(updated, adminOnly[actor], 'forbidden', /only admins can change cluster queues/);
        assertError(deleted, adminOnly[actor], 'forbidden', /only admins can delete cluster queues/);
        assert.ok(!names.includes(fresh));
        assert.ok(names.includes(unused));
        assert.deepEqual((await api(ctx.admin, 'GET', `/cluster-queues/${existing}`)).body, before.body);
      }
    });

    void test(`list and show as ${actor}`, async () => {
      const list = await api<QueueBody[]>(world.tokens[actor], 'GET', '/cluster-queues');
      assertStatus(list, 200);
      assert.ok(list.body.some((q) => q.name === 'q1'));
      const one = await api<QueueBody>(world.tokens[actor], 'GET', '/cluster-queues/q1');
      assertStatus(one, 200);
      assert.equal(one.body.name, 'q1');
      assert.deepEqual(one.body.quota, { cpu: '4', memory: '8Gi' });
      assertError(await api(world.tokens[actor], 'GET', '/cluster-queues/nope'), 404, 'not_found', /"nope"/);
    });
  }
});

void describe('users: role boundaries', () => {
  for (const actor of ACTORS) {
    const me = ACTOR_USER[actor];
    const token = () => world.tokens[actor];
    void test(`whoami as ${actor}`, async () => {
      const res = await api<{ kind: string; name: string; admin: boolean }>(token(), 'GET', '/whoami');
      assertStatus(res, 200);
      assert.equal(res.body.kind, 'user');
      assert.equal(res.body.name, me);
      assert.equal(res.body.admin, actor === 'admin');
    });

    void test(`create, list, show and delete users as ${actor}`, async () => {
      const created = await api(token(), 'POST', '/users', { name: `made-by-${actor}` });
      const list = await api<{ name: string }[]>(token(), 'GET', '/users');
      const self = await api<{ name: string }>(token(), 'GET', `/users/${me}`);
      const other = await api<{ name: string }>(
        token(),
        'GET',
        `/users/${actor === 'admin' ? 'otto' : 'admin'}`,
      );
      const victim = `victim-of-${actor}`;
      await createUser(api, ctx.admin, victim);
      const deleted = await api(token(), 'DELETE', `/users/${victim}`);
      assertStatus(self, 200);
      assert.equal(self.body.name, me);
      const users = (await api<{ name: string }[]>(ctx.admin, 'GET', '/users')).body.map((u) => u.name);
      if (actor === 'admin') {
        assertStatus(created, 201);
        assertStatus(list, 200);
        assert.ok(list.body.some((u) => u.name === 'otto'));
        assertStatus(other, 200);
        assertStatus(deleted, 204);
        assert.ok(users.includes(`made-by-${actor}`));
        assert.ok(!users.includes(victim));
      } else {
        assertError(created, 403, 'forbidden', /only admins can create users/);
        assertError(list, 403, 'forbidden', /only admins can list users/);
        assertError(other, 403, 'forbidden');
        assertError(deleted, 403, 'forbidden', /only admins can delete users/);
        assert.ok(!users.includes(`made-by-${actor}`));
        assert.ok(users.includes(victim));
      }
    });

    void test(`tokens as ${actor}: own always, others only as admin`, async () => {
      const own = await api<{ name: string; token: string }>(token(), 'POST', `/users/${me}/tokens`, {
        label: 'laptop',
      });
      assertStatus(own, 201);
      assert.equal(own.body.name, me);
      const who = await api<{ name: string }>(own.body.token, 'GET', '/whoami');
      assert.equal(who.body.name, me, 'the new token authenticates as its user');
      const other = await api<{ token: string }>(token(), 'POST', '/users/extra/tokens', {});
      if (actor === 'admin') {
        assertStatus(other, 201);
        assert.equal((await api<{ name: string }>(other.body.token, 'GET', '/whoami')).body.name, 'extra');
      } else {
        assertError(other, 403, 'forbidden');
      }
    });
  }

  void test('a non-admin asking for a missing user gets the same 403 as for an existing one', async () => {
    const a = await api<ErrorBody>(world.tokens.viewer, 'GET', '/users/otto');
    const b = await api<ErrorBody>(world.tokens.viewer, 'GET', '/users/nobody');
    assertError(a, 403, 'forbidden');
    assertError(b, 403, 'forbidden');
    assert.equal(a.body.error.message, b.body.error.message);
  });

  void test('a deleted user loses its membership and its tokens', async () => {
    const gone = await createUser(api, ctx.admin, 'gone');
    await world.project('with-gone');
    assertStatus(await api(ctx.admin, 'PUT', '/projects/with-gone/members/gone', { role: 'member' }), 200);
    assertStatus(await api(gone.token, 'GET', '/projects/with-gone'), 200);
    assertStatus(await api(ctx.admin, 'DELETE', '/users/gone'), 204);
    assertError(await api(gone.token, 'GET', '/whoami'), 401, 'unauthorized');
    const members = (await adminView('with-gone'))?.members?.map((m) => m.user);
    assert.ok(members && !members.includes('gone'));
  });

  void test('an admin created through the API has admin powers', async () => {
    const boss = await createUser(api, ctx.admin, 'boss', true);
    assert.equal(boss.admin, true);
    assertStatus(await api(boss.token, 'GET', '/users'), 200);
    await world.project('boss-sees');
    assertStatus(await api(boss.token, 'GET', '/projects/boss-sees'), 200);
  });
});
