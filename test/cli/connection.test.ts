/**
 * How the CLI finds its server, token and project: local discovery (the README flow), login and
 * contexts, environment overrides, and one-line errors when there is nothing to talk to.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';

import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import {
  berth,
  closedPort,
  fails,
  keyValues,
  ok,
  parseJson,
  readConfig,
  row,
  sandbox,
  type Sandbox,
} from './cli.js';
import { scratchDir } from '../helpers/scratch.js';

let server: TestServer;
/** Where the in-process server records itself as "the last server started". */
let stateHome: string;

before(async () => {
  stateHome = scratchDir('berth-cli-state-');
  process.env.XDG_STATE_HOME = stateHome;
  server = await startTestServer();
});
after(async () => {
  await server.close();
  rmSync(stateHome, { recursive: true, force: true });
});

const admin = () => ({ BERTH_URL: server.url, BERTH_TOKEN: server.adminToken });

async function newUser(name: string): Promise<string> {
  const res = await call<{ token: string }>(server.api, server.adminToken, 'POST', '/users', { name });
  assert.equal(res.status, 201);
  return res.body.token;
}

describe('a local user with no setup (the README flow)', () => {
  let sb: Sandbox;
  before(() => {
    sb = sandbox();
  });
  after(() => sb.remove());
  /** No BERTH_* variables: the server is found as the last one this user started. */
  const run = (args: string[]) => berth(sb, args, { env: { XDG_STATE_HOME: stateHome } });

  it('creates a project, uses it, and lists it as current', async () => {
    assert.match(
      ok(await run(['project', 'create', 'ml', '--queue', 'default', '--tag', 'gpu'])),
      /project ml created/,
    );
    assert.match(ok(await run(['project', 'use', 'ml'])), /now using project ml \(context local\)/);
    const list = ok(await run(['project', 'list']));
    assert.deepEqual(row(list, 'NAME', 'ml'), {
      CURRENT: '*',
      NAME: 'ml',
      QUEUE: 'default',
      TAGS: 'gpu',
      ACTIVE: 'yes',
    });
    assert.equal(row(list, 'NAME', 'default').CURRENT, '');
  });

  it('remembered the project in an implicit context, in a 0600 file', async () => {
    assert.equal(statSync(sb.configFile).mode & 0o777, 0o600);
    assert.deepEqual(readConfig(sb), {
      current: 'local',
      contexts: { local: { dataDir: server.dataDir, project: 'ml' } },
    });
    const me = keyValues(ok(await run(['whoami'])));
    assert.equal(me.user, 'admin');
    assert.equal(me.server, server.url);
    assert.match(me.replica ?? '', /^leader \(term \d+\)$/);
    assert.equal(me.project, 'ml (from context "local")');
  });

  it('resets the current project when it is deleted', async () => {
    ok(await run(['project', 'create', 'tmp', '--queue', 'default']));
    ok(await run(['project', 'use', 'tmp']));
    assert.match(ok(await run(['project', 'delete', 'tmp'])), /current project is now default/);
    assert.equal(readConfig(sb).contexts.local?.project, undefined);
    ok(await run(['project', 'use', 'ml']));
  });

  it('refuses to use a project that does not exist, and keeps the old one', async () => {
    fails(await run(['project', 'use', 'nope']), 1, /^berth: project "nope" not found\n$/);
    assert.equal(readConfig(sb).contexts.local?.project, 'ml');
  });
});

describe('local server discovery', () => {
  let sb: Sandbox;
  before(() => {
    sb = sandbox();
  });
  after(() => sb.remove());

  it('finds ./.berth in the working directory', async () => {
    const work = join(sb.root, 'with-dot-berth');
    mkdirSync(work);
    symlinkSync(server.dataDir, join(work, '.berth'));
    const me = parseJson<{ name: string }>(await berth(sb, ['whoami', '-o', 'json'], { cwd: work }));
    assert.equal(me.name, 'admin');
  });

  it('prefers ./.berth over a saved context for another, stopped, local server', async () => {
    const stale = join(sb.root, 'gone');
    mkdirSync(stale);
    mkdirSync(dirname(sb.configFile), { recursive: true });
    writeFileSync(
      sb.configFile,
      `current: local\ncontexts:\n  local:\n    dataDir: ${stale}\n    project: x\n`,
      {
        mode: 0o600,
      },
    );
    const work = join(sb.root, 'new-server');
    mkdirSync(work);
    symlinkSync(server.dataDir, join(work, '.berth'));
    const me = parseJson<{ name: string }>(await berth(sb, ['whoami', '-o', 'json'], { cwd: work }));
    assert.equal(me.name, 'admin');
    // Elsewhere the saved context still applies (and fails, naming its data directory).
    const r = await berth(sb, ['whoami'], { cwd: sb.cwd });
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, new RegExp(`^berth: .*${stale}`));
    rmSync(sb.configFile);
  });

  it('finds $BERTH_DATA_DIR', async () => {
    const me = keyValues(ok(await berth(sb, ['whoami'], { env: { BERTH_DATA_DIR: server.dataDir } })));
    assert.equal(me.via, `local server in ${server.dataDir}`);
  });

  it('says how to start a server when $BERTH_DATA_DIR has none running', async () => {
    const dir = join(sb.root, 'stopped');
    mkdirSync(dir);
    fails(
      await berth(sb, ['project', 'list'], { env: { BERTH_DATA_DIR: dir } }),
      1,
      new RegExp(`no berth server is running in ${dir} .*berth server --data-dir ${dir}`),
    );
  });

  it('says what to do when there is no server at all', async () => {
    fails(
      await berth(sb, ['project', 'list']),
      1,
      /^berth: no berth server found: .*berth login.*berth server/,
    );
  });

  it('reports a stale server.json as unreachable, in one line', async () => {
    const dir = join(sb.root, 'stale');
    mkdirSync(dir);
    const port = await closedPort();
    writeFileSync(
      join(dir, 'server.json'),
      JSON.stringify({ url: `http://127.0.0.1:${port}`, pid: 1, dataDir: dir }),
    );
    writeFileSync(join(dir, 'admin.token'), 'berth_x\n');
    fails(
      await berth(sb, ['queue', 'list'], { env: { BERTH_DATA_DIR: dir } }),
      1,
      new RegExp(
        `^berth: cannot reach berth at http://127\\.0\\.0\\.1:${port}: connection refused \\(is the server in ${dir} still running\\?`,
      ),
    );
  });
});

describe('login and contexts', () => {
  let sb: Sandbox;
  let bobToken: string;
  before(async () => {
    sb = sandbox();
    bobToken = await newUser('bob');
  });
  after(() => sb.remove());

  it('verifies the token before saving anything', async () => {
    fails(
      await berth(sb, ['login', '--url', server.url, '--token', 'berth_wrong']),
      1,
      /^berth: invalid token \(token from --token\)\n$/,
    );
    assert.throws(() => statSync(sb.configFile), { code: 'ENOENT' });
  });

  it('saves a context, normalizing the URL, and makes it current', async () => {
    const out = ok(
      await berth(sb, ['login', '--url', `${server.url}/api/v1/`, '--token', bobToken, '--name', 'work']),
    );
    assert.equal(out, `logged in to ${server.url} as bob; context work is now current\n`);
    assert.equal(statSync(sb.configFile).mode & 0o777, 0o600);
    assert.deepEqual(readConfig(sb), {
      current: 'work',
      contexts: { work: { url: server.url, token: bobToken } },
    });
    const me = parseJson<{ name: string; admin: boolean }>(await berth(sb, ['whoami', '-o', 'json']));
    assert.deepEqual([me.name, me.admin], ['bob', false]);
  });

  it('reads the token from stdin with --token -, naming the context after the host', async () => {
    const host = new URL(server.url).host;
    ok(await berth(sb, ['login', '--url', server.url, '--token', '-'], { input: `${server.adminToken}\n` }));
    const list = ok(await berth(sb, ['context', 'list']));
    assert.deepEqual(row(list, 'NAME', host), {
      CURRENT: '*',
      NAME: host,
      SERVER: server.url,
      PROJECT: 'default',
    });
    assert.equal(row(list, 'NAME', 'work').CURRENT, '');
    assert.doesNotMatch(list, /berth_/, 'tokens must not be listed');
  });

  it('switches contexts', async () => {
    assert.equal(ok(await berth(sb, ['context', 'use', 'work'])), 'context work is now current\n');
    assert.equal(keyValues(ok(await berth(sb, ['whoami']))).user, 'bob');
    fails(
      await berth(sb, ['context', 'use', 'nope']),
      1,
      /^berth: no context "nope" in .*config\.yaml \(known: work, /,
    );
  });

  it('forgets a context and its token', async () => {
    const host = new URL(server.url).host;
    assert.equal(ok(await berth(sb, ['context', 'delete', host])), `context ${host} deleted\n`);
    assert.deepEqual(Object.keys(readConfig(sb).contexts), ['work']);
    assert.equal(readConfig(sb).current, 'work');
  });

  it('lets BERTH_URL and BERTH_TOKEN override the context, and BERTH_TOKEN alone replace its token', async () => {
    assert.equal(keyValues(ok(await berth(sb, ['whoami'], { env: admin() }))).user, 'admin');
    const me = keyValues(ok(await berth(sb, ['whoami'], { env: { BERTH_TOKEN: server.adminToken } })));
    assert.deepEqual([me.user, me.via], ['admin', 'context "work"']);
    fails(
      await berth(sb, ['whoami'], { env: { BERTH_URL: server.url } }),
      1,
      /BERTH_URL is set but BERTH_TOKEN is not/,
    );
  });

  it('refuses a URL that is not http(s), as a usage error', async () => {
    fails(
      await berth(sb, ['login', '--url', 'ftp://x', '--token', 't']),
      2,
      /^berth: --url: "ftp:\/\/x" is not an http:\/\/ or https:\/\/ URL\n$/,
    );
  });

  it('reports an unreachable server in one line', async () => {
    const port = await closedPort();
    fails(
      await berth(sb, ['login', '--url', `http://127.0.0.1:${port}`, '--token', 't']),
      1,
      new RegExp(`^berth: cannot reach berth at http://127\\.0\\.0\\.1:${port}: connection refused\\n$`),
    );
    fails(
      await berth(sb, ['project', 'list'], {
        env: { BERTH_URL: `http://127.0.0.1:${port}`, BERTH_TOKEN: 't' },
      }),
      1,
      new RegExp(`^berth: cannot reach berth at http://127\\.0\\.0\\.1:${port}: connection refused\\n$`),
    );
  });

  it('reports a malformed config file in one line naming it', async () => {
    const broken = sandbox();
    try {
      mkdirSync(join(broken.config, 'berth'));
      writeFileSync(broken.configFile, 'contexts: [oops\n');
      fails(await berth(broken, ['whoami']), 1, /config\.yaml: invalid YAML/);
      writeFileSync(broken.configFile, 'current: x\ncontexts:\n  x: {url: http://h}\n');
      fails(
        await berth(broken, ['whoami']),
        1,
        /config\.yaml: contexts\.x: needs either url and token, or dataDir/,
      );
    } finally {
      broken.remove();
    }
  });
});

describe('the current project', () => {
  let sb: Sandbox;
  before(async () => {
    sb = sandbox();
    ok(await berth(sb, ['login', '--url', server.url, '--token', server.adminToken, '--name', 'a']));
    ok(await berth(sb, ['project', 'create', 'alpha', '--queue', 'default']));
    ok(await berth(sb, ['project', 'create', 'beta', '--queue', 'default']));
  });
  after(() => sb.remove());

  const current = async (args: string[] = [], env: Record<string, string> = {}) =>
    parseJson<{ name: string }>(await berth(sb, ['project', 'show', '-o', 'json', ...args], { env })).name;

  it('is "default" until one is used', async () => {
    assert.equal(await current(), 'default');
  });

  it("is the context's after project use, overridden by BERTH_PROJECT, overridden by --project", async () => {
    ok(await berth(sb, ['project', 'use', 'alpha']));
    assert.equal(await current(), 'alpha');
    assert.equal(await current([], { BERTH_PROJECT: 'beta' }), 'beta');
    assert.equal(await current(['--project', 'default'], { BERTH_PROJECT: 'beta' }), 'default');
  });

  it('cannot be remembered when the server comes from BERTH_URL', async () => {
    fails(
      await berth(sb, ['project', 'use', 'beta'], { env: admin() }),
      1,
      /BERTH_URL is set.*--project beta/,
    );
    assert.equal(await current(), 'alpha');
  });
});

describe('a server that is not berth', () => {
  let sb: Sandbox;
  let web: Server;
  let url: string;
  before(async () => {
    sb = sandbox();
    web = createServer((req, res) => {
      const found = req.url === '/api/v1/whoami';
      res.writeHead(found ? 200 : 404, { 'content-type': 'text/html' }).end('<html>hello</html>');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const address = web.address();
    assert.ok(address && typeof address === 'object');
    url = `http://127.0.0.1:${address.port}`;
  });
  after(async () => {
    sb.remove();
    await new Promise<void>((resolve) => web.close(() => resolve()));
  });

  it('is reported in one line, whatever it answers', async () => {
    const env = { BERTH_URL: url, BERTH_TOKEN: 't' };
    fails(
      await berth(sb, ['whoami'], { env }),
      1,
      new RegExp(
        `^berth: unexpected answer from ${url}: HTTP 200 \\(text/html\\); is this a berth server\\?\\n$`,
      ),
    );
    fails(
      await berth(sb, ['project', 'list'], { env }),
      1,
      /HTTP 404 \(text\/html\); is this a berth server\?/,
    );
  });
});
