/**
 * A browser's token on a WebSocket upgrade (api/socket-token.ts): read from the subprotocols it
 * offers, each malformed offer refused with why (never with the token); and on a real server,
 * only on an upgrade without an Authorization header, with `berth.exec.v1` selected, never the
 * token's protocol; through a replica that does not lead too (PostgreSQL pass), the token never in
 * what a server prints. The dashboard's terminal over it: test/web/terminal.test.ts.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import {
  EXEC_SUBPROTOCOL,
  TOKEN_SUBPROTOCOL_PREFIX,
  chooseProtocol,
  offeredProtocols,
  socketToken,
  type SocketToken,
} from '../../src/api/socket-token.js';
import { execPath, socketUrl } from '../../src/cli/exec-stream.js';
import { getJob, submit } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { adminOf, call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { health, replicaConfig } from '../replicas/support.js';

const TOKEN = 'berth_Zm9v-YmFy_0123456789abcdefABCDEF';
const encode = (token: string) => Buffer.from(token, 'latin1').toString('base64url');
const offer = (token: string) => `${TOKEN_SUBPROTOCOL_PREFIX}${encode(token)}`;

describe('socketToken', () => {
  const token = (t: string): SocketToken => ({ kind: 'token', token: t });
  const cases: [string, string | string[] | undefined, SocketToken | 'malformed'][] = [
    ['no header', undefined, { kind: 'none' }],
    ['an empty header', '', { kind: 'none' }],
    ['berth.exec.v1 alone', EXEC_SUBPROTOCOL, { kind: 'none' }],
    ['other protocols alone', 'chat, superchat', { kind: 'none' }],
    ['the token after berth.exec.v1', `${EXEC_SUBPROTOCOL}, ${offer(TOKEN)}`, token(TOKEN)],
    ['the token before berth.exec.v1', `${offer(TOKEN)},${EXEC_SUBPROTOCOL}`, token(TOKEN)],
    ['the token in a header of its own', [EXEC_SUBPROTOCOL, offer(TOKEN)], token(TOKEN)],
    ['spaces around the entries', `  ${EXEC_SUBPROTOCOL} ,  ${offer(TOKEN)}  `, token(TOKEN)],
    // Every length modulo 4 that base64url without padding has (bytes 1, 2, 3 past a multiple).
    ...['a', 'ab', 'abc', 'abcd'].map((t): [string, string, SocketToken] => [
      `a ${t.length}-character token`,
      `${EXEC_SUBPROTOCOL},${offer(t)}`,
      token(t),
    ]),
    ['a token of every visible character', `${EXEC_SUBPROTOCOL},${offer('!"#~ok{}')}`, token('!"#~ok{}')],
    ['the token without berth.exec.v1', offer(TOKEN), 'malformed'],
    ['two tokens', `${EXEC_SUBPROTOCOL},${offer(TOKEN)},${offer('other')}`, 'malformed'],
    ['two equal tokens', [EXEC_SUBPROTOCOL, offer(TOKEN), offer(TOKEN)], 'malformed'],
    ['an empty token', `${EXEC_SUBPROTOCOL},${TOKEN_SUBPROTOCOL_PREFIX}`, 'malformed'],
    ['padding', `${EXEC_SUBPROTOCOL},${offer('ab')}=`, 'malformed'],
    ['base64 rather than base64url', `${EXEC_SUBPROTOCOL},${TOKEN_SUBPROTOCOL_PREFIX}+/+/`, 'malformed'],
    ['a length no base64 has', `${EXEC_SUBPROTOCOL},${TOKEN_SUBPROTOCOL_PREFIX}abcde`, 'malformed'],
    ['stray bits in the last character', `${EXEC_SUBPROTOCOL},${TOKEN_SUBPROTOCOL_PREFIX}YR`, 'malformed'],
    ['a space in the token', `${EXEC_SUBPROTOCOL},${offer('ab cd')}`, 'malformed'],
    ['a newline in the token', `${EXEC_SUBPROTOCOL},${offer('ab\ncd')}`, 'malformed'],
    ['a byte past ASCII in the token', `${EXEC_SUBPROTOCOL},${offer('ab\u00e9')}`, 'malformed'],
    [
      "Kubernetes' own prefix is not berth's",
      `${EXEC_SUBPROTOCOL},base64url.bearer.authorization.k8s.io.${encode(TOKEN)}`,
      { kind: 'none' },
    ],
  ];
  for (const [what, header, expected] of cases)
    it(what, () => {
      const got = socketToken(header);
      if (expected !== 'malformed') return assert.deepEqual(got, expected);
      assert.equal(got.kind, 'malformed', JSON.stringify(got));
      const why = (got as { why: string }).why;
      assert.match(why, /^Sec-WebSocket-Protocol: /);
      assert.ok(!why.includes(TOKEN) && !why.includes(encode(TOKEN)), `the message holds the token: ${why}`);
    });

  it('reads every entry of several headers, in order', () =>
    assert.deepEqual(offeredProtocols(['a, b', ' c ', '', 'd,,e']), ['a', 'b', 'c', 'd', 'e']));
});

describe('chooseProtocol', () => {
  for (const [offered, chosen] of [
    [[EXEC_SUBPROTOCOL, offer(TOKEN)], EXEC_SUBPROTOCOL],
    [[offer(TOKEN), EXEC_SUBPROTOCOL], EXEC_SUBPROTOCOL],
    [[offer(TOKEN)], false],
    [['chat'], false],
    [[], false],
  ] as const)
    it(`picks ${String(chosen)} from [${offered.join(', ')}]`, () =>
      assert.equal(chooseProtocol(new Set<string>(offered)), chosen));
});

const support = probeSandbox();
const noNamespaces = support.available ? false : `jobs run without namespaces here: ${support.why}`;

const tokens: Record<string, string> = {};
let waiting = 0;
let running = 0;

const server = useTestServer({ config: localFactoryConfig() }, async () => {
  const s = server();
  const admin = adminOf(s);
  await admin('POST', '/cluster-queues', { name: 'held', quota: { cpu: '4' }, stopPolicy: 'Hold' });
  for (const [user, project, queue] of [
    ['alice', 'alpha', 'default'],
    ['bob', 'beta', 'default'],
  ] as const) {
    tokens[user] = (await admin<{ token: string }>('POST', '/users', { name: user })).token;
    await admin('POST', '/projects', { name: project, clusterQueue: queue });
    await admin('PUT', `/projects/${project}/members/${user}`, { role: 'member' });
  }
  await admin('POST', '/projects', { name: 'gamma', clusterQueue: 'held' });
  await admin('PUT', '/projects/gamma/members/alice', { role: 'member' });
  // A job that never runs (its queue is held): exec answers 409 to who may see it, after the token.
  waiting = (await submit(s.api, tokens.alice!, 'gamma', { command: ['true'] })).id;
  if (noNamespaces) return;
  running = (await submit(s.api, tokens.alice!, 'alpha', { script: 'exec sleep 300' })).id;
  await waitFor(
    'the job to run',
    async () => (await getJob(s.api, tokens.alice!, running)).state === 'running',
  );
});

interface Upgrade {
  /** 101 when upgraded, else the refusal's status. */
  status: number;
  /** The refusal's message. */
  message?: string;
  /** The subprotocol the server selected, as its answer said. */
  selected?: string | undefined;
  ws?: WebSocket;
}

/** A WebSocket upgrade of `path` with `protocols` offered and `headers` sent. */
const upgrade = (path: string, protocols: string[], headers: Record<string, string> = {}) =>
  new Promise<Upgrade>((resolve, reject) => {
    const ws = new WebSocket(socketUrl(server().url, path), protocols, { headers });
    let selected: string | undefined;
    ws.once('upgrade', (res) => {
      const h = res.headers['sec-websocket-protocol'];
      selected = Array.isArray(h) ? h.join(', ') : h;
    });
    ws.once('open', () => resolve({ status: 101, selected, ws }));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          message: (JSON.parse(text) as { error: { message: string } }).error.message,
        }),
      );
    });
    ws.once('error', reject);
  });

const browserOffer = (token: string) => [EXEC_SUBPROTOCOL, offer(token)];

describe('a token offered as a subprotocol', () => {
  const sh = (job: number) => execPath(job, ['sh', '-c', 'echo "from a subprotocol $((6*7))"'], 0);

  it("authenticates an upgrade without an Authorization header: each user's own answer", async () => {
    // alice submitted the job and may see it: it is not running (409); bob is no member of its
    // project: not found (404); nobody's token: 401.
    assert.deepEqual(await upgrade(sh(waiting), browserOffer(tokens.alice!)), {
      status: 409,
      message: (await upgrade(sh(waiting), [], { authorization: `Bearer ${tokens.alice!}` })).message,
    });
    assert.equal(
      (await upgrade(sh(waiting), browserOffer(tokens.alice!))).message?.includes('running'),
      true,
    );
    assert.equal((await upgrade(sh(waiting), browserOffer(tokens.bob!))).status, 404);
    const unknown = await upgrade(sh(waiting), browserOffer('berth_not-a-token'));
    assert.deepEqual(unknown, { status: 401, message: 'invalid token' });
    assert.equal((await upgrade(sh(waiting), [EXEC_SUBPROTOCOL])).status, 401);
  });

  it('is not read where an Authorization header is sent: the header decides', async () => {
    const r = await upgrade(sh(waiting), browserOffer(tokens.alice!), {
      authorization: `Bearer ${tokens.bob!}`,
    });
    assert.equal(r.status, 404, 'as bob');
    const bad = await upgrade(sh(waiting), browserOffer(tokens.alice!), {
      authorization: 'Bearer berth_nobody',
    });
    assert.deepEqual(bad, { status: 401, message: 'invalid token' });
  });

  it('is refused when malformed, saying why and never echoing it', async () => {
    const r = await upgrade(sh(waiting), [offer(tokens.alice!)]);
    assert.equal(r.status, 401);
    assert.match(r.message ?? '', /berth\.exec\.v1/);
    assert.ok(!r.message?.includes(encode(tokens.alice!)), r.message);
    const two = await upgrade(sh(waiting), [...browserOffer(tokens.alice!), offer(tokens.bob!)]);
    assert.equal(two.status, 401);
    assert.match(two.message ?? '', /more than one token/);
  });

  it('is not read on a request that is no upgrade', async () => {
    const res = await fetch(`${server().api}/whoami`, {
      headers: { 'sec-websocket-protocol': browserOffer(tokens.alice!).join(', ') },
    });
    assert.equal(res.status, 401);
    const withHeader = await call<{ name: string }>(server().api, tokens.alice, 'GET', '/whoami');
    assert.equal(withHeader.body.name, 'alice', 'the same call with the header is answered');
  });

  it(
    'opens a session in a running job, with berth.exec.v1 selected and the token not echoed',
    { skip: noNamespaces },
    async () => {
      // The token first: a server that took the first offered (ws's default) would echo it.
      const r = await upgrade(sh(running), [offer(tokens.alice!), EXEC_SUBPROTOCOL]);
      assert.equal(r.status, 101);
      assert.equal(r.selected, EXEC_SUBPROTOCOL);
      const ws = r.ws!;
      assert.equal(ws.protocol, EXEC_SUBPROTOCOL);
      let out = '';
      let status: { exitCode: number } | undefined;
      ws.on('message', (d: Buffer) => {
        if (d[0] === 1) out += d.subarray(1).toString();
        if (d[0] === 3) status = JSON.parse(d.subarray(1).toString()) as { exitCode: number };
      });
      const code = await new Promise<number>((resolve) => ws.once('close', (c: number) => resolve(c)));
      assert.equal(code, 1000);
      assert.match(out, /from a subprotocol 42/);
      assert.equal(status?.exitCode, 0);
      // The audit log names alice as who ran it: the token was hers.
      const audit = await call<{ action: string; actor: string; subject: string }[]>(
        server().api,
        server().adminToken,
        'GET',
        '/audit?project=alpha&user=alice',
      );
      assert.ok(
        audit.body.some((a) => a.action === 'job.exec' && a.subject === String(running)),
        JSON.stringify(audit.body),
      );
    },
  );

  it(
    'offered with no token, selects no protocol the client did not offer (the CLI offers none)',
    { skip: noNamespaces },
    async () => {
      const r = await upgrade(sh(running), ['chat'], { authorization: `Bearer ${tokens.alice!}` }).catch(
        (e: Error) => ({ status: -1, message: e.message }),
      );
      // ws refuses to open a connection whose server selected nothing of what it offered: the
      // server selected nothing, which ws takes as an error ("Server sent no subprotocol").
      assert.equal(r.status, -1);
      assert.match(r.message ?? '', /no subprotocol/);
      const plain = await upgrade(sh(running), [], { authorization: `Bearer ${tokens.alice!}` });
      assert.equal(plain.status, 101);
      assert.equal(plain.selected, undefined);
      plain.ws!.close();
    },
  );
});

describe(
  'a token offered as a subprotocol, through a replica that does not lead',
  {
    skip: TEST_STORE !== 'postgres' ? 'runs in the PostgreSQL pass' : noNamespaces,
  },
  () => {
    const dir = scratchDir('berth-socket-token-');
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, replicaConfig());
    let replicas: ServerProcess[] = [];
    let db: TestDatabase | undefined;
    after(async () => {
      for (const r of replicas)
        if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("reaches the leader's job as the token's user, and is printed by neither server", async () => {
      db = await createTestDatabase();
      const leader = await spawnServer(join(dir, 'r1'), config, { database: db.url });
      const follower = await spawnServer(join(dir, 'r2'), config, { database: db.url, token: leader.token });
      replicas = [leader, follower];
      assert.equal((await health(follower)).role, 'follower');
      // A user's token (the admin's is printed at first start, by design).
      const carol = await call<{ token: string }>(leader.api, leader.token, 'POST', '/users', {
        name: 'carol',
      });
      const token = carol.body.token;
      await call(leader.api, leader.token, 'PUT', '/projects/default/members/carol', { role: 'member' });
      const job = await submit(leader.api, token, 'default', { command: ['sleep', '300'] });
      await waitFor(
        'the job to run',
        async () => (await getJob(leader.api, token, job.id)).state === 'running',
      );

      // The follower hands the session to the leader with the token the subprotocol carried.
      const url = socketUrl(follower.url, execPath(job.id, ['sh', '-c', 'echo "via $((6*7))"'], 0));
      const ws = new WebSocket(url, browserOffer(token));
      let out = '';
      ws.on('message', (d: Buffer) => {
        if (d[0] === 1) out += d.subarray(1).toString();
      });
      const closed = await new Promise<number>((resolve, reject) => {
        ws.once('close', (code: number) => resolve(code));
        ws.once('error', reject);
      });
      assert.equal(closed, 1000);
      assert.equal(ws.protocol, EXEC_SUBPROTOCOL);
      assert.equal(out, 'via 42\n');
      // A token nobody has is the leader's 401, as an ordinary answer.
      const refused = await new Promise<number>((resolve, reject) => {
        const bad = new WebSocket(url, browserOffer('berth_nobody'));
        bad.once('unexpected-response', (_req, res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        bad.once('open', () => reject(new Error('opened with a token nobody has')));
        bad.once('error', reject);
      });
      assert.equal(refused, 401);

      await call(leader.api, leader.token, 'POST', `/jobs/${job.id}/cancel`);
      for (const r of replicas) {
        const printed = r.output();
        assert.ok(printed.length > 0, 'the server printed its start');
        assert.ok(!printed.includes(token) && !printed.includes(encode(token)), printed);
      }
    });
  },
);
