/**
 * `berth exec` and `berth attach` through a replica that does not lead: the session is opened on
 * the leader (whose agent host holds the job) and carried frame by frame; a refusal is the
 * leader's, as an ordinary answer. Before, a follower answered 503.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { attachPath, execPath, socketUrl } from '../../src/cli/exec-stream.js';
import { getJob, submit } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { health, replicaConfig } from './support.js';

const support = probeSandbox();
const skip =
  TEST_STORE !== 'postgres'
    ? 'runs in the PostgreSQL pass'
    : !support.available && `jobs run without namespaces here: ${support.why}`;

/** The frames of a session through `via` at `path`: its output, its status, its close code. */
function session(via: ServerProcess, path: string, input: string[] = []) {
  const ws = new WebSocket(socketUrl(via.url, path), { headers: { authorization: `Bearer ${via.token}` } });
  let out = '';
  let status: { exitCode: number | null; message?: string } | undefined;
  ws.on('message', (d: Buffer) => {
    if (d[0] === 1) out += d.subarray(1).toString();
    if (d[0] === 3) status = JSON.parse(d.subarray(1).toString()) as typeof status;
  });
  ws.once('open', () => {
    for (const line of input) ws.send(Buffer.concat([Buffer.of(0), Buffer.from(line)]));
  });
  const closed = new Promise<number>((resolve, reject) => {
    ws.once('close', (code: number) => resolve(code));
    ws.once('error', reject);
  });
  return { ws, out: () => out, status: () => status, closed };
}

describe('exec and attach through a follower', { skip }, () => {
  const dir = scratchDir('berth-exec-follower-');
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, replicaConfig(['  interactive: { factory: local, defaultTimeout: 10m }']));
  let running: ServerProcess[] = [];
  let db: TestDatabase | undefined;

  after(async () => {
    for (const r of running) if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("carries a session to the leader's job, and the leader's refusal back", async () => {
    db = await createTestDatabase();
    const leader = await spawnServer(join(dir, 'r1'), config, { database: db.url });
    const follower = await spawnServer(join(dir, 'r2'), config, { database: db.url, token: leader.token });
    running = [leader, follower];
    assert.equal((await health(follower)).role, 'follower');

    const job = await submit(leader.api, leader.token, 'default', { command: ['sleep', '300'] });
    await waitFor(
      'the job to run',
      async () => (await getJob(leader.api, leader.token, job.id)).state === 'running',
    );
    const exec = session(follower, execPath(job.id, ['sh', '-c', 'echo "in job $BERTH_JOB_ID"; exit 5'], 0));
    assert.equal(await exec.closed, 1000);
    assert.equal(exec.out(), `in job ${job.id}\n`);
    assert.equal(exec.status()?.exitCode, 5);

    const shell = await submit(leader.api, leader.token, 'default', {
      command: ['sh'],
      target: 'interactive',
      interactive: true,
    });
    await waitFor(
      'the shell to run',
      async () => (await getJob(leader.api, leader.token, shell.id)).state === 'running',
    );
    const attach = session(follower, attachPath(shell.id, { cols: 80, rows: 24 }), [
      'echo "via $((40 + 2))"\n',
      'exit 3\n',
    ]);
    assert.equal(await attach.closed, 1000);
    assert.match(attach.out(), /via 42/);
    assert.equal(attach.status()?.exitCode, 3);

    const missing = await call(follower.api, follower.token, 'GET', '/jobs/999999/exec?command=true');
    assert.equal(missing.status, 404, missing.text);
    await call(leader.api, leader.token, 'POST', `/jobs/${job.id}/cancel`);
  });
});
