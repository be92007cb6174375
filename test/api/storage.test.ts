/**
 * What the API leaves in the data directory: tokens only as hashes, admin.token private, and an
 * event row for every change, written in the change's own transaction.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { refuseInserts, storeOf, tableNames } from '../helpers/db.js';
import type { TestServer } from '../helpers/server.js';
import {
  assertError,
  assertStatus,
  createProject,
  createQueue,
  createUser,
  sha256,
  useServer,
  withDb,
} from './fixtures.js';

interface EventRow {
  id: number;
  at: number;
  subject_kind: string;
  subject: string;
  project: string | null;
  job_id: number | null;
  type: string;
  message: string;
  data: string | null;
}

/** The events about users, cluster queues and projects (the controller records others). */
const events = (server: TestServer): Promise<EventRow[]> =>
  withDb(server, (db) =>
    db
      .selectFrom('events')
      .selectAll()
      .where('subject_kind', 'in', ['user', 'cluster-queue', 'project'])
      .orderBy('id')
      .execute(),
  );

void describe('tokens at rest', () => {
  const ctx = useServer();
  const { api } = ctx;

  void test('admin.token holds the admin token, readable by its owner only', async () => {
    const file = join(ctx.server.dataDir, 'admin.token');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const token = readFileSync(file, 'utf8');
    assert.match(token, /^berth_[A-Za-z0-9_-]{43}\n$/);
    const who = await api<{ name: string; admin: boolean }>(token.trim(), 'GET', '/whoami');
    assertStatus(who, 200);
    assert.deepEqual([who.body.name, who.body.admin], ['admin', true]);
  });

  void test('no column and no byte of the database holds a plaintext token', async () => {
    const tokens = [ctx.admin];
    tokens.push((await createUser(api, ctx.admin, 'alice')).token);
    tokens.push((await createUser(api, ctx.admin, 'root2', true)).token);
    for (const label of ['ci', 'laptop']) {
      const res = await api<{ token: string }>(ctx.admin, 'POST', '/users/alice/tokens', { label });
      assertStatus(res, 201);
      tokens.push(res.body.token);
    }
    assert.equal(new Set(tokens).size, tokens.length, 'every token is new');
    for (const t of tokens) assertStatus(await api(t, 'GET', '/whoami'), 200);

    // The secret part of each token, without its well-known prefix.
    const secrets = tokens.map((t) => t.replace(/^berth_/, ''));
    const store = storeOf(ctx.server);
    const tables = await tableNames(store);
    assert.ok(tables.includes('api_tokens') && tables.includes('events'));
    let cells = 0;
    for (const table of tables) {
      const { rows } = await sql<Record<string, unknown>>`SELECT * FROM ${sql.table(table)}`.execute(
        store.db,
      );
      for (const row of rows) {
        for (const [column, value] of Object.entries(row)) {
          cells++;
          const text = String(value);
          for (const s of secrets) assert.ok(!text.includes(s), `${table}.${column} holds a token`);
        }
      }
    }
    assert.ok(cells > 0);
    const hashes = new Set(
      (await store.db.selectFrom('api_tokens').select('hash').execute()).map((r) => r.hash),
    );
    for (const t of tokens) assert.ok(hashes.has(sha256(t)), 'each token is stored as its SHA-256');
    // SQLite's files, byte by byte (PostgreSQL's are the server's, not this test's to read).
    for (const file of ['berth.db', 'berth.db-wal']) {
      const path = join(ctx.server.dataDir, file);
      if (!existsSync(path)) continue;
      const bytes = readFileSync(path).toString('latin1');
      for (const s of secrets) assert.ok(!bytes.includes(s), `${file} holds a token`);
    }
  });
});

void describe('events', () => {
  const ctx = useServer();
  const { api } = ctx;

  /** Runs a change and returns the event rows it wrote. */
  async function change(method: string, path: string, body: unknown, status: number): Promise<EventRow[]> {
    const last = (await events(ctx.server)).at(-1)?.id ?? 0;
    assertStatus(await api(ctx.admin, method, path, body), status, `${method} ${path}`);
    return (await events(ctx.server)).filter((e) => e.id > last);
  }

  const one = (rows: EventRow[], expected: Partial<EventRow>) => {
    assert.equal(rows.length, 1, JSON.stringify(rows));
    const [row] = rows;
    for (const [k, v] of Object.entries(expected)) assert.equal(row![k as keyof EventRow], v, k);
    assert.ok(row!.message.length > 0);
    assert.ok(Math.abs(row!.at - Date.now()) < 60_000, 'stamped with the current time');
    return row!;
  };

  void test('first start recorded the admin, the default queue and the default project', async () => {
    const rows = (await events(ctx.server)).map((e) => `${e.subject_kind}/${e.subject}/${e.type}`);
    assert.deepEqual(rows, [
      'user/admin/created',
      'cluster-queue/default/created',
      'project/default/created',
    ]);
  });

  void test('users: create, new token, delete', async () => {
    one(await change('POST', '/users', { name: 'ev-user' }, 201), {
      subject_kind: 'user',
      subject: 'ev-user',
      type: 'created',
    });
    one(await change('POST', '/users/ev-user/tokens', { label: 'ci' }, 201), {
      subject: 'ev-user',
      type: 'token-created',
      message: 'token "ci" created for ev-user',
    });
    one(await change('DELETE', '/users/ev-user', undefined, 204), { subject: 'ev-user', type: 'deleted' });
  });

  void test('cluster queues: create, update, delete', async () => {
    const created = one(await change('POST', '/cluster-queues', { name: 'ev-q', quota: { cpu: '2' } }, 201), {
      subject_kind: 'cluster-queue',
      subject: 'ev-q',
      type: 'created',
    });
    assert.deepEqual((JSON.parse(created.data!) as { quota: unknown }).quota, { cpu: '2' });
    const updated = one(await change('PATCH', '/cluster-queues/ev-q', { stopPolicy: 'Hold' }, 200), {
      subject: 'ev-q',
      type: 'updated',
    });
    assert.deepEqual(JSON.parse(updated.data!), { stopPolicy: 'Hold' });
    one(await change('DELETE', '/cluster-queues/ev-q', undefined, 204), { subject: 'ev-q', type: 'deleted' });
  });

  void test('projects: create, update, members, privileges, delete', async () => {
    await createUser(api, ctx.admin, 'ev-member');
    const p = { subject_kind: 'project', subject: 'ev-p', project: 'ev-p' };
    one(await change('POST', '/projects', { name: 'ev-p', clusterQueue: 'default' }, 201), {
      ...p,
      type: 'created',
    });
    one(await change('PATCH', '/projects/ev-p', { description: 'd' }, 200), { ...p, type: 'updated' });
    one(await change('PUT', '/projects/ev-p/members/ev-member', { role: 'member' }, 200), {
      ...p,
      type: 'member-set',
      message: 'ev-member is now member of ev-p',
    });
    one(await change('DELETE', '/projects/ev-p/members/ev-member', undefined, 200), {
      ...p,
      type: 'member-removed',
    });
    one(await change('PUT', '/projects/ev-p/privileges/target.gpu', undefined, 200), {
      ...p,
      type: 'privilege-granted',
    });
    assert.deepEqual(
      await change('PUT', '/projects/ev-p/privileges/target.gpu', undefined, 200),
      [],
      'no-op grant',
    );
    one(await change('DELETE', '/projects/ev-p/privileges/target.gpu', undefined, 200), {
      ...p,
      type: 'privilege-revoked',
    });
    one(await change('DELETE', '/projects/ev-p', undefined, 204), { ...p, type: 'deleted' });
  });

  void test('refused changes write no event', async () => {
    await createQueue(api, ctx.admin, 'ev-used');
    await createProject(api, ctx.admin, 'ev-user-of', 'ev-used');
    assert.deepEqual(await change('POST', '/users', { name: 'admin' }, 409), []);
    assert.deepEqual(await change('DELETE', '/cluster-queues/ev-used', undefined, 409), []);
    assert.deepEqual(await change('POST', '/projects', { name: 'x', clusterQueue: 'nope' }, 422), []);
    assert.deepEqual(await change('PATCH', '/cluster-queues/ev-used', { quota: { cpu: 'x' } }, 400), []);
    assert.deepEqual(await change('PUT', '/projects/ev-user-of/members/nobody', { role: 'viewer' }, 404), []);
  });
});

void describe('a change and its event share one transaction', () => {
  // The failures below are deliberate: keep their error logs out of the test output.
  const ctx = useServer(
    async () => {
      await createQueue(api, ctx.admin, 'victim');
      await createProject(api, ctx.admin, 'victim', 'victim');
      await createUser(api, ctx.admin, 'victim');
      await refuseVictimEvents(true);
    },
    { config: 'logLevel: fatal\n' },
  );
  const { api } = ctx;

  /** While on, recording any event about "victim…" fails, except the creation of "victim" itself. */
  let refusal: { drop(): Promise<void> } | undefined;
  async function refuseVictimEvents(on: boolean) {
    if (!on) {
      await refusal?.drop();
      refusal = undefined;
      return;
    }
    refusal = await refuseInserts(
      storeOf(ctx.server),
      'refuse_victim',
      'events',
      "NEW.subject LIKE 'victim%' AND NOT (NEW.subject = 'victim' AND NEW.type = 'created')",
      'event refused by test',
    );
  }

  const state = async () => ({
    queues: (await api(ctx.admin, 'GET', '/cluster-queues')).body,
    projects: (await api(ctx.admin, 'GET', '/projects')).body,
    victim: (await api(ctx.admin, 'GET', '/projects/victim')).body,
    users: (await api(ctx.admin, 'GET', '/users')).body,
    tokens: (await storeOf(ctx.server).db.selectFrom('api_tokens').select('hash').execute()).length,
    events: (await events(ctx.server)).length,
  });

  const changes: [string, string, unknown][] = [
    ['POST', '/cluster-queues', { name: 'victim-q' }],
    ['PATCH', '/cluster-queues/victim', { stopPolicy: 'Hold' }],
    ['DELETE', '/cluster-queues/victim-unused', undefined],
    ['POST', '/projects', { name: 'victim-p', clusterQueue: 'victim' }],
    ['PATCH', '/projects/victim', { description: 'changed' }],
    ['PUT', '/projects/victim/members/victim', { role: 'owner' }],
    ['PUT', '/projects/victim/privileges/target.gpu', undefined],
    ['DELETE', '/projects/victim', undefined],
    ['POST', '/users', { name: 'victim-u' }],
    ['POST', '/users/victim/tokens', {}],
    ['DELETE', '/users/victim', undefined],
  ];
  for (const [method, path, body] of changes) {
    void test(`${method} ${path} is rolled back when its event cannot be written`, async () => {
      if (path === '/cluster-queues/victim-unused') {
        await refuseVictimEvents(false);
        await createQueue(api, ctx.admin, 'victim-unused');
        await refuseVictimEvents(true);
      }
      const before = await state();
      const res = await api(ctx.admin, method, path, body);
      const err = assertError(res, 500, 'internal', /internal server error/);
      assert.ok(!/refused|SQLITE|postgres|at /i.test(err.error.message), 'no internals in the answer');
      assert.deepEqual(await state(), before);
    });
  }
});
