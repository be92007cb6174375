/**
 * Images from a private registry (issue #41): a project's credentials, set by its owner or an
 * admin, sealed in the store, used for that project's jobs only; an image another project pulled
 * with them is not served to a project that could not pull it. A real registry that takes one
 * login (Debian's docker-registry with htpasswd) on 127.0.0.1. Root and bubblewrap needed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { BERTH_ARGS } from '../helpers/berth-command.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { imageSkip, pushImage, startRegistry, TEST_LOGIN, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';
import { call } from '../helpers/server.js';
import { localConfig, logs, start, type Started } from '../helpers/started-server.js';

const skip = imageSkip(probeSandbox());

interface Failed {
  state: string;
  reason: string;
  attempts: number;
}

describe('images from a private registry', { skip }, () => {
  let registry: TestRegistry;
  let s: Started;
  let work: string;
  let image: string;
  let digest: string;
  let bob: string;
  let alice: string;

  /** `berth ARGS` as the holder of `token`, `input` on its stdin; its stdout. */
  const berth = (args: string[], token: string, input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      // Not a synchronous child: the server answering it runs in this process.
      const child = spawn(process.execPath, [...BERTH_ARGS, ...args], {
        env: { ...process.env, BERTH_URL: s.server.url, BERTH_TOKEN: token },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('close', (code) =>
        code === 0 ? resolve(out) : reject(new Error(`berth ${args.join(' ')}: ${err}`)),
      );
      child.stdin.end(input ?? '');
    });

  before(async () => {
    work = scratchDir('berth-private-registry-');
    registry = await startRegistry(join(work, 'registry'), { private: true });
    digest = pushImage(work, registry, 'team/secret', '1', { files: { '/etc/secret': 'private bits\n' } });
    image = `${registry.host}/team/secret:1`;
    // The key every replica would share (on PostgreSQL there is no default: docs/IMAGES.md).
    const key = join(work, 'secret.key');
    writeFileSync(key, randomBytes(32).toString('base64'), { mode: 0o600 });
    s = await start([`secretKeyFile: ${key}`, 'images: { tagCacheSeconds: 0 }', localConfig()].join('\n'));
    // Two projects: ml (alice owns it), and other (bob's), which never logs in.
    for (const [method, path, body] of [
      ['POST', '/users', { name: 'alice' }],
      ['POST', '/users', { name: 'bob' }],
      ['POST', '/projects', { name: 'ml', clusterQueue: 'default' }],
      ['POST', '/projects', { name: 'other', clusterQueue: 'default' }],
      ['PUT', '/projects/ml/members/alice', { role: 'owner' }],
      ['PUT', '/projects/other/members/bob', { role: 'member' }],
      ['PUT', '/projects/ml/members/bob', { role: 'member' }],
    ] as const) {
      const r = await call<{ token?: string }>(s.api, s.token, method, path, body);
      assert.ok(r.status < 300, r.text);
      if (path === '/users' && body.name === 'bob') bob = r.body.token!;
      if (path === '/users' && body.name === 'alice') alice = r.body.token!;
    }
  });
  after(async () => {
    await s?.close();
    await registry?.close();
  });

  it("fails a project's job at once when it has no login: the registry's refusal, no retry", async () => {
    const j = await submit(s.api, s.token, 'other', { image, command: ['cat', '/etc/secret'], retries: 2 });
    const done = (await waitDone(s.api, s.token, j.id)) as unknown as Failed;
    assert.equal(done.state, 'failed');
    assert.match(
      done.reason,
      /^image 127\.0\.0\.1:\d+\/team\/secret:1: .*(unauthorized|authentication required)/i,
    );
    assert.equal(done.attempts, 0);
  });

  it("keeps a project's login sealed, shows it to no one, and pulls the project's images with it", async () => {
    // A member may not set it; the owner may; the password never comes back.
    const refused = await call(s.api, bob, 'PUT', `/projects/ml/registries/${registry.host}`, TEST_LOGIN);
    assert.equal(refused.status, 403, refused.text);
    const set = await call<Record<string, unknown>>(
      s.api,
      s.token,
      'PUT',
      `/projects/ml/registries/${registry.host}`,
      TEST_LOGIN,
    );
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(
      [set.body.registry, set.body.username, 'password' in set.body],
      [registry.host, 'ci', false],
    );
    // The CLI as the owner runs it, the password on stdin.
    const cli = await berth(['project', 'registry', 'list', 'ml'], alice);
    assert.match(cli, new RegExp(`^${registry.host.replace(/\./g, '\\.')} +ci +admin `, 'm'));
    assert.equal(
      await berth(
        ['project', 'registry', 'login', 'ml', registry.host, '--username', 'ci'],
        alice,
        TEST_LOGIN.password,
      ),
      `project ml pulls from ${registry.host} as ci\n`,
    );
    const listed = await call(s.api, s.token, 'GET', '/projects/ml/registries');
    assert.doesNotMatch(listed.text, new RegExp(TEST_LOGIN.password));
    assert.match(listed.text, /"username":"ci"/);
    const audit = await call(s.api, s.token, 'GET', '/audit');
    assert.match(audit.text, /"action":"registry\.login"/);
    assert.doesNotMatch(audit.text, new RegExp(TEST_LOGIN.password));
    // Sealed in the store: the database's file holds no password in the clear.
    const db = join(s.dataDir, 'berth.db');
    if (existsSync(db))
      for (const file of [db, `${db}-wal`].filter((f) => existsSync(f)))
        assert.ok(!readFileSync(file).includes(TEST_LOGIN.password), `${file} holds the password`);

    const j = await submit(s.api, s.token, 'ml', { image, script: 'cat /etc/secret; env' });
    const done = await waitDone(s.api, s.token, j.id);
    const log = await logs(s, j.id);
    assert.equal(done.state, 'succeeded', `${done.reason}: ${log}`);
    assert.match(log, /^private bits$/m);
    assert.doesNotMatch(log, new RegExp(TEST_LOGIN.password), 'nothing of the login in its environment');
  });

  it('does not serve the image another project pulled to a project that could not pull it, by tag or digest', async () => {
    for (const ref of [image, `${registry.host}/team/secret@${digest}`]) {
      const j = await submit(s.api, s.token, 'other', { image: ref, command: ['cat', '/etc/secret'] });
      const done = (await waitDone(s.api, s.token, j.id)) as unknown as Failed;
      assert.equal(done.state, 'failed', ref);
      assert.match(done.reason, /unauthorized|authentication required/i, ref);
      assert.equal(await logs(s, j.id), '', `${ref}: nothing of the image ran`);
    }
  });

  it('forgets a login: the next job of the project is refused', async () => {
    const r = await call(s.api, s.token, 'DELETE', `/projects/ml/registries/${registry.host}`);
    assert.equal(r.status, 204, r.text);
    const again = await call(s.api, s.token, 'DELETE', `/projects/ml/registries/${registry.host}`);
    assert.equal(again.status, 404, again.text);
    const j = await submit(s.api, s.token, 'ml', { image, command: ['cat', '/etc/secret'] });
    const done = (await waitDone(s.api, s.token, j.id)) as unknown as Failed;
    assert.equal(done.state, 'failed');
    const bad = await call(s.api, s.token, 'PUT', '/projects/ml/registries/not a host', TEST_LOGIN);
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /is not a registry's name/);
  });
});
