/**
 * `berth exec`'s and `berth attach`'s WebSocket protocol (api/routes/exec.ts) as an attacker
 * meets it, on every store: text frames, unknown channels, sizes that are none and oversized
 * frames close the connection and end the command; a client that reads nothing holds the command
 * back and loses nothing; one that vanishes ends it; the server stays up; a user past
 * `sessions.maxPerUser` is refused. An interactive job's terminal: typed on and read from, taken
 * over by a newer attach (the older told why), each attach audited.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { attachPath, execPath, socketUrl } from '../../src/cli/exec-stream.js';
import { getJob, submit } from '../helpers/jobs.js';
import { jobProcesses } from '../helpers/processes.js';
import { call, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { twoTenants } from '../security/tenants.js';

const support = probeSandbox();
const skip = support.available ? false : `jobs run without namespaces here: ${support.why}`;

const tokens: Record<string, string> = {};
let job: number;

const s = useTestServer(
  {
    config: [
      'graceSeconds: 1',
      'sessions: { maxPerUser: 24 }',
      'factories:',
      '  local: { kind: local, capacity: 4 }',
      'targets:',
      '  local: { factory: local, defaultTimeout: 10m }',
    ].join('\n'),
  },
  async () => {
    if (skip) return;
    Object.assign(tokens, await twoTenants(s()));
    const erin = await call<{ token: string }>(s().api, s().adminToken, 'POST', '/users', { name: 'erin' });
    tokens.erin = erin.body.token;
    await call(s().api, s().adminToken, 'PUT', '/projects/teama/members/erin', { role: 'owner' });
    job = (await submit(s().api, tokens.alice!, 'teama', { script: 'exec sleep 3000' })).id;
    await waitFor(
      'the job to run',
      async () => (await getJob(s().api, tokens.alice!, job)).state === 'running',
    );
  },
);

/** A raw connection as alice to `path`. */
const connect = (path: string, token = tokens.alice!) =>
  new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(socketUrl(s().url, path), { headers: { authorization: `Bearer ${token}` } });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
const closed = (ws: WebSocket) =>
  new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));

describe("berth exec's protocol, under attack", { skip }, () => {
  /** A raw connection as alice, running `command` in the job. */
  const open = (command: string[], tty?: { cols: number; rows: number }) =>
    connect(execPath(job, command, 0, tty));
  /** Whether the job has a process `sleep SECONDS` (each case sleeps a number of its own). */
  const running = (seconds: number) =>
    jobProcesses(s(), job).some((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${seconds}\0`;
      } catch {
        return false;
      }
    });

  let seconds = 4000;
  for (const [what, frame, code] of [
    ['a text frame', 'hello', 1008],
    ['an unknown channel', Buffer.of(9, 1, 2), 1008],
    ['an empty frame', Buffer.alloc(0), 1008],
    ['a resize that is no size', Buffer.concat([Buffer.of(4), Buffer.from('{"cols":0,"rows":1e9}')]), 1008],
    ['a frame over 1 MiB', Buffer.alloc((1 << 20) + 16), 1009],
  ] as const)
    it(`closes the connection on ${what} and ends the command`, async () => {
      const n = ++seconds;
      const ws = await open(['sleep', String(n)]);
      await waitFor('the command to run', () => running(n));
      const gone = closed(ws);
      ws.send(frame);
      assert.equal(await gone, code);
      await waitFor('the command to end', () => !running(n));
    });

  it('counts a session as an open exec stream while it lasts (the metrics, issue #43)', async () => {
    const execs = async () => {
      const r = await call<string>(s().api, s().adminToken, 'GET', '/metrics');
      const line = r.text.split('\n').find((l) => l.startsWith('berth_open_streams{kind="exec"} '));
      return Number(line?.split(' ')[1]);
    };
    const before = await execs();
    const n = ++seconds;
    const ws = await open(['sleep', String(n)]);
    await waitFor('the command to run', () => running(n));
    await waitFor('the session counted', async () => (await execs()) === before + 1);
    const gone = closed(ws);
    ws.close();
    await gone;
    await waitFor('the session no longer counted', async () => (await execs()) === before);
    await waitFor('the command to end', () => !running(n));
  });

  it('gives the command a terminal: its size and each change, ^C to what runs in front, its exit status', async () => {
    const ws = await open(['bash', '--norc'], { cols: 100, rows: 30 });
    let out = '';
    let status: { exitCode: number } | undefined;
    ws.on('message', (d: Buffer) => {
      if (d[0] === 1) out += d.subarray(1).toString();
      if (d[0] === 3) status = JSON.parse(d.subarray(1).toString()) as { exitCode: number };
    });
    const type = (text: string) => ws.send(Buffer.concat([Buffer.of(0), Buffer.from(text)]));
    type('stty size\n');
    await waitFor('its size', () => out.includes('30 100'));
    ws.send(Buffer.concat([Buffer.of(4), Buffer.from(JSON.stringify({ cols: 120, rows: 40 }))]));
    type('stty size\n');
    await waitFor('its new size', () => out.includes('40 120'));
    type('sleep 4300\n');
    await waitFor('the sleep to run', () => running(4300));
    type('\u0003');
    type('echo "alive $?"\n');
    await waitFor('^C to have stopped the sleep, not the shell', () => out.includes('alive 130'));
    assert.equal(running(4300), false);
    const gone = closed(ws);
    type('exit 7\n');
    assert.equal(await gone, 1000);
    assert.equal(status?.exitCode, 7);
  });

  it('holds the command back while its client reads nothing, and loses nothing', async () => {
    const total = 200 << 20;
    const ws = await open(['head', '-c', String(total), '/dev/zero']);
    // The client stops reading: its socket is paused, the kernel's buffers fill.
    const raw = (ws as unknown as { _socket: Socket })._socket;
    raw.pause();
    let got = 0;
    ws.on('message', (d: Buffer) => {
      if (d[0] === 1) got += d.length - 1;
    });
    const head = await waitFor('head to run', () =>
      jobProcesses(s(), job).find((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('head\0');
        } catch {
          return false;
        }
      }),
    );
    const written = () => Number(/^wchar: (\d+)$/m.exec(readFileSync(`/proc/${head}/io`, 'utf8'))?.[1]);
    // It stops writing: what it wrote holds still over many looks.
    let last = -1;
    let still = 0;
    const held = await waitFor('head to be held back', () => {
      const now = written();
      still = now === last ? still + 1 : 0;
      last = now;
      return still >= 20 ? now : undefined;
    });
    assert.ok(held < 64 << 20, `${held} bytes written while nothing was read`);
    const gone = closed(ws);
    raw.resume();
    assert.equal(await gone, 1000);
    assert.equal(got, total);
  });

  it('refuses a user one session past sessions.maxPerUser (429), and takes one again once another closed', async () => {
    const asErin = () =>
      new Promise<WebSocket | number>((resolve, reject) => {
        const ws = new WebSocket(socketUrl(s().url, execPath(job, ['cat'], 0)), {
          headers: { authorization: `Bearer ${tokens.erin!}` },
        });
        ws.once('open', () => resolve(ws));
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('error', reject);
      });
    const open: WebSocket[] = [];
    for (let i = 0; i < 24; i++) {
      const ws = await asErin();
      if (typeof ws === 'number') assert.fail(`session ${i + 1}: refused with ${ws}`);
      open.push(ws);
    }
    assert.equal(await asErin(), 429);
    const refused = await call(s().api, tokens.erin, 'GET', `/jobs/${job}/exec?command=true`);
    assert.equal(refused.status, 429);
    assert.match(refused.text, /erin has 24 sessions open, the most one user may \(sessions\.maxPerUser\)/);
    const last = open.pop()!;
    const gone = closed(last);
    last.close();
    await gone;
    await waitFor('a session to be taken again', async () => {
      const ws = await asErin();
      if (typeof ws === 'number') return undefined;
      ws.close();
      return true;
    });
    for (const ws of open) ws.close();
  });

  it('ends the command when the client vanishes, and keeps serving', async () => {
    const ws = await open(['sleep', '4242']);
    await waitFor('the command to run', () => running(4242));
    ws.terminate(); // no close frame: the TCP connection just goes
    await waitFor('the command to end', () => !running(4242));
    const again = await open(['echo', 'still here']);
    let out = '';
    again.on('message', (d: Buffer) => {
      if (d[0] === 1) out += d.subarray(1).toString();
    });
    assert.equal(await closed(again), 1000);
    assert.equal(out, 'still here\n');
  });
});

describe("an interactive job's terminal, over the protocol", { skip }, () => {
  let interactive: number;
  before(async () => {
    if (skip) return;
    interactive = (await submit(s().api, tokens.alice!, 'teama', { command: ['sh'], interactive: true })).id;
    await waitFor(
      'the interactive job to run',
      async () => (await getJob(s().api, tokens.alice!, interactive)).state === 'running',
    );
  });

  it('is typed on and read from; a newer attach takes it over, the older told why; each is audited', async () => {
    const first = await connect(attachPath(interactive, { cols: 80, rows: 24 }));
    let out = '';
    const status: unknown[] = [];
    first.on('message', (d: Buffer) => {
      if (d[0] === 1) out += d.subarray(1).toString();
      if (d[0] === 3) status.push(JSON.parse(d.subarray(1).toString()));
    });
    first.send(Buffer.concat([Buffer.of(0), Buffer.from('echo "typed $((3 * 4))"\n')]));
    await waitFor('its answer', () => out.includes('typed 12'));
    const firstClosed = closed(first);
    const second = await connect(attachPath(interactive, { cols: 80, rows: 24 }));
    let replayed = '';
    second.on('message', (d: Buffer) => {
      if (d[0] === 1) replayed += d.subarray(1).toString();
    });
    assert.equal(await firstClosed, 1000);
    assert.match(JSON.stringify(status), /attached elsewhere/);
    await waitFor('the output before, shown to the newer client', () => replayed.includes('typed 12'));
    // A frame the protocol does not know lets go of the terminal; the job runs on.
    const secondClosed = closed(second);
    second.send('hello');
    assert.equal(await secondClosed, 1008);
    assert.equal((await getJob(s().api, tokens.alice!, interactive)).state, 'running');
    const audit = await call<{ action: string; subject: string }[]>(
      s().api,
      s().adminToken,
      'GET',
      '/audit?limit=50',
    );
    assert.equal(
      audit.body.filter((r) => r.action === 'job.attach' && r.subject === String(interactive)).length,
      2,
      audit.text,
    );
    await call(s().api, tokens.alice, 'POST', `/jobs/${interactive}/cancel`);
  });

  it("refuses another project's member (404), and a job that is not interactive (409)", async () => {
    const bob = await call(s().api, tokens.bob, 'GET', `/jobs/${interactive}/attach`);
    assert.equal(bob.status, 404, bob.text);
    const batch = await call(s().api, tokens.alice, 'GET', `/jobs/${job}/attach`);
    assert.equal(batch.status, 409, batch.text);
    assert.match(batch.text, /is not interactive/);
  });
});
