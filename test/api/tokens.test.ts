/**
 * A token's life through the API: listed (label, created, last used, expiry — never the token),
 * given an expiry, revoked by its id; an expired or revoked token is 401 at once, also right after
 * it was used (a revoked one from the server's cache); the bootstrap admin token replaced and
 * revoked; and on replicas, a token revoked through one is refused by the others too.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { hashToken } from '../../src/domain/tokens.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call, useTestServer, type TestServer } from '../helpers/server.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { replicaConfig } from '../replicas/support.js';
import type { NewTokenView, TokenView } from '../../src/domain/tokens.js';
import { scratchDir } from '../helpers/scratch.js';

type NewToken = NewTokenView;

const whoami = (s: Pick<TestServer, 'api'>, token: string) => call(s.api, token, 'GET', '/whoami');

async function newUser(s: TestServer, name: string): Promise<string> {
  const r = await call<{ token: string }>(s.api, s.adminToken, 'POST', '/users', { name });
  assert.equal(r.status, 201, r.text);
  return r.body.token;
}

async function newToken(s: TestServer, asToken: string, user: string, body: object): Promise<NewToken> {
  const r = await call<NewToken>(s.api, asToken, 'POST', `/users/${user}/tokens`, body);
  assert.equal(r.status, 201, r.text);
  return r.body;
}

async function list(s: TestServer, asToken: string, user: string): Promise<TokenView[]> {
  const r = await call<TokenView[]>(s.api, asToken, 'GET', `/users/${user}/tokens`);
  assert.equal(r.status, 200, r.text);
  return r.body;
}

describe('tokens', () => {
  const server = useTestServer();

  it('lists a user’s tokens with label, created, last used and expiry — never the token or its hash', async () => {
    const s = server();
    const first = await newUser(s, 'lister');
    const laptop = await newToken(s, first, 'lister', { label: 'laptop', expiresIn: '30d' });
    assert.match(laptop.id, /^[0-9a-f]{12}$/);
    assert.equal(laptop.label, 'laptop');
    const in30d = Date.now() + 30 * 86_400_000;
    assert.ok(Math.abs(Date.parse(laptop.expiresAt!) - in30d) < 60_000, laptop.expiresAt!);

    const r = await call<TokenView[]>(s.api, first, 'GET', '/users/lister/tokens');
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.map((t) => [t.label, t.expiresAt === null]),
      [
        ['initial token', true],
        ['laptop', false],
      ],
    );
    for (const t of r.body) {
      assert.deepEqual(Object.keys(t).sort(), ['createdAt', 'expiresAt', 'id', 'label', 'lastUsedAt']);
      assert.ok(Number.isFinite(Date.parse(t.createdAt)));
    }
    for (const secret of [first, laptop.token, hashToken(first), hashToken(laptop.token)])
      assert.ok(!r.text.includes(secret), 'the list holds a token or its hash');
    // The id is a prefix of the hash, which tells nothing of the token.
    assert.equal(laptop.id, hashToken(laptop.token).slice(0, 12));
  });

  it('records "last used" on first use, then at most once a minute', async () => {
    const s = server();
    const token = await newUser(s, 'user1');
    assert.equal((await list(s, s.adminToken, 'user1'))[0]!.lastUsedAt, null);
    const before = Date.now();
    assert.equal((await whoami(s, token)).status, 200);
    const used = await waitFor('last used to be recorded', async () => {
      const t = (await list(s, s.adminToken, 'user1'))[0]!;
      return t.lastUsedAt ?? undefined;
    });
    assert.ok(Date.parse(used) >= before - 1000, used);
    for (let i = 0; i < 5; i++) assert.equal((await whoami(s, token)).status, 200);
    // Uses within the minute write nothing (the list itself is made with that token).
    for (let i = 0; i < 3; i++) await list(s, token, 'user1');
    assert.equal((await list(s, s.adminToken, 'user1'))[0]!.lastUsedAt, used);
  });

  it('revokes a token by its id: 401 at once, even right after it was used (cached)', async () => {
    const s = server();
    const first = await newUser(s, 'revoker');
    const a = await newToken(s, first, 'revoker', { label: 'a' });
    const b = await newToken(s, first, 'revoker', { label: 'b' });
    // Used, so the server has them cached.
    assert.equal((await whoami(s, a.token)).status, 200);
    assert.equal((await whoami(s, b.token)).status, 200);

    const r = await call<TokenView & { name: string }>(
      s.api,
      first,
      'DELETE',
      `/users/revoker/tokens/${a.id}`,
    );
    assert.equal(r.status, 200, r.text);
    assert.deepEqual([r.body.id, r.body.label, r.body.name], [a.id, 'a', 'revoker']);
    const refused = await whoami(s, a.token);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer/);

    // By id alone, as the token's owner (here with the token itself).
    assert.equal((await call(s.api, b.token, 'DELETE', `/tokens/${b.id}`)).status, 200);
    assert.equal((await whoami(s, b.token)).status, 401);

    assert.deepEqual(
      (await list(s, first, 'revoker')).map((t) => t.label),
      ['initial token'],
    );
    const again = await call<{ error: { message: string } }>(s.api, first, 'DELETE', `/tokens/${a.id}`);
    assert.equal(again.status, 404);
    assert.match(again.body.error.message, new RegExp(`token ${a.id} not found`));
    const bad = await call<{ error: { message: string } }>(s.api, first, 'DELETE', '/tokens/zz');
    assert.equal(bad.status, 404);
    assert.match(bad.body.error.message, /not a token id: 12 hex digits/);
    assert.equal((await whoami(s, first)).status, 200, 'the other tokens still work');
  });

  it('lets users manage only their own tokens; admins anyone’s', async () => {
    const s = server();
    const mallory = await newUser(s, 'mallory');
    const victim = await newUser(s, 'victim');
    const victimId = hashToken(victim).slice(0, 12);
    const cases: [string, string, number][] = [
      ['GET', '/users/victim/tokens', 403],
      ['POST', '/users/victim/tokens', 403],
      ['DELETE', `/users/victim/tokens/${victimId}`, 403],
      // By id alone another's token is not found: ids do not tell whose they are.
      ['DELETE', `/tokens/${victimId}`, 404],
    ];
    for (const [method, path, status] of cases) {
      const r = await call(s.api, mallory, method, path, method === 'POST' ? {} : undefined);
      assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
    }
    assert.equal((await whoami(s, victim)).status, 200);
    assert.equal((await list(s, s.adminToken, 'victim')).length, 1);
    assert.equal((await call(s.api, s.adminToken, 'DELETE', `/tokens/${victimId}`)).status, 200);
    assert.equal((await whoami(s, victim)).status, 401);
    assert.equal((await call(s.api, s.adminToken, 'GET', '/users/nobody/tokens')).status, 404);
  });

  it('refuses an expired token from the moment it expires, right after it was used', async () => {
    const s = server();
    const first = await newUser(s, 'expirer');
    const t = await newToken(s, first, 'expirer', { label: 'short', expiresIn: '1s' });
    assert.equal((await whoami(s, t.token)).status, 200);
    const expiresAt = Date.parse(t.expiresAt!);
    const refused = await waitFor('the token to expire', async () => {
      const r = await call<{ error: { message: string } }>(s.api, t.token, 'GET', '/whoami');
      return r.status === 401 ? { at: Date.now(), r } : undefined;
    });
    // Not a moment later than the polling shows (the token cache would keep a token 10 s).
    assert.ok(refused.at - expiresAt < 2000, `refused ${refused.at - expiresAt} ms after its expiry`);
    assert.equal(refused.r.body.error.message, 'token has expired');
    assert.ok(refused.at >= expiresAt);
    // Listed as it is, with its expiry, until revoked.
    assert.equal((await list(s, first, 'expirer')).find((x) => x.id === t.id)?.expiresAt, t.expiresAt);
  });

  it('gives a user’s first token an expiry; refuses a malformed one with a clear message', async () => {
    const s = server();
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const u = await call<{ name: string; tokenId: string; tokenExpiresAt: string }>(
      s.api,
      s.adminToken,
      'POST',
      '/users',
      { name: 'temp', tokenExpiresAt: at },
    );
    assert.equal(u.status, 201, u.text);
    assert.equal(u.body.tokenExpiresAt, at);
    assert.deepEqual(
      (await list(s, s.adminToken, 'temp')).map((t) => [t.id, t.expiresAt]),
      [[u.body.tokenId, at]],
    );
    const bad: [object, RegExp][] = [
      [{ expiresIn: 'soon' }, /expiresIn "soon" is not a duration: write e.g. 30d/],
      [{ expiresIn: '0s' }, /expiresIn "0s" is not a duration/],
      [{ expiresAt: 'tomorrow' }, /expiresAt "tomorrow" is not a time/],
      [{ expiresAt: '2001-01-01T00:00:00Z' }, /is in the past/],
      [{ expiresIn: '1d', expiresAt: at }, /either expiresIn or expiresAt, not both/],
      [{ expiresIn: '99999d' }, /at most 10 years/],
    ];
    for (const [body, message] of bad) {
      const r = await call<{ error: { code: string; message: string } }>(
        s.api,
        s.adminToken,
        'POST',
        '/users/temp/tokens',
        body,
      );
      assert.equal(r.status, 400, r.text);
      assert.match(r.body.error.message, message);
    }
    assert.equal((await list(s, s.adminToken, 'temp')).length, 1, 'no token made by a refused request');
  });
});

describe('the bootstrap admin token', () => {
  const server = useTestServer();

  it('is replaced by a new admin token and revoked; admin.token then holds a dead token', async () => {
    const s = server();
    const ops = await newToken(s, s.adminToken, 'admin', { label: 'ops' });
    const tokens = await list(s, ops.token, 'admin');
    const initial = tokens.find((t) => t.label === 'initial token');
    assert.ok(initial, JSON.stringify(tokens));
    assert.equal(
      initial.id,
      hashToken(readFileSync(join(s.dataDir, 'admin.token'), 'utf8').trim()).slice(0, 12),
    );
    assert.equal((await call(s.api, ops.token, 'DELETE', `/tokens/${initial.id}`)).status, 200);
    assert.equal((await whoami(s, s.adminToken)).status, 401);
    const me = await call<{ name: string; admin: boolean }>(s.api, ops.token, 'GET', '/whoami');
    assert.deepEqual([me.status, me.body.name, me.body.admin], [200, 'admin', true]);
    assert.deepEqual(
      (await list(s, ops.token, 'admin')).map((t) => t.label),
      ['ops'],
    );
  });
});

describe('tokens on replicas', { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' }, () => {
  const dir = scratchDir('berth-token-replicas-');
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, replicaConfig());
  let running: ServerProcess[] = [];
  let db: TestDatabase | undefined;
  after(async () => {
    for (const r of running) await killHard(r);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a token revoked through one replica is refused by the other, which had it cached', async () => {
    db = await createTestDatabase();
    const one = await spawnServer(join(dir, 'one'), config, { database: db.url });
    const two = await spawnServer(join(dir, 'two'), config, { database: db.url, token: one.token });
    running = [one, two];
    const u = await call<{ token: string }>(one.api, one.token, 'POST', '/users', { name: 'roamer' });
    assert.equal(u.status, 201, u.text);
    const t = await call<NewToken>(one.api, u.body.token, 'POST', '/users/roamer/tokens', { label: 'x' });
    assert.equal((await whoami(two, t.body.token)).status, 200); // cached on two
    assert.equal((await call(one.api, one.token, 'DELETE', `/tokens/${t.body.id}`)).status, 200);
    // The notice crosses the bus in milliseconds; the cache would otherwise keep it 10 s from
    // the whoami above. The bound is well under that and well over a loaded machine's delays.
    const t0 = Date.now();
    await waitFor(
      'the other replica to refuse it',
      async () => (await whoami(two, t.body.token)).status === 401,
    );
    assert.ok(Date.now() - t0 < 6000, `refused after ${Date.now() - t0} ms`);
    assert.equal((await whoami(one, t.body.token)).status, 401);
    assert.equal((await whoami(two, u.body.token)).status, 200, 'its other token still works');
  });
});
