/**
 * A worker whose agent stops heartbeating is declared lost, and its job fails with that reason.
 * The agent is frozen for real (SIGSTOP to the agent host process), not simulated.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, it } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { agentHost } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

let s: TestServer;
let hostPid: number | undefined;

before(async () => {
  const dir = scratchDir('berth-lost-');
  writeFileSync(join(dir, 'berth.yaml'), 'heartbeatSeconds: 2\ngraceSeconds: 1\n');
  s = await startTestServer({ configFile: join(dir, 'berth.yaml') });
});
after(async () => {
  if (hostPid) process.kill(hostPid, 'SIGCONT');
  await s.close();
});

it('fails the job of a worker that stopped heartbeating', async () => {
  const job = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '300'] });
  await waitFor(
    'the job to run',
    async () => (await getJob(s.api, s.adminToken, job.id)).state === 'running',
  );
  hostPid = agentHost();
  process.kill(hostPid, 'SIGSTOP');
  const done = await waitDone(s.api, s.adminToken, job.id, 30_000);
  assert.equal(done.state, 'failed');
  assert.match(done.reason, /worker lost: no heartbeat for \d+s/);
  process.kill(hostPid, 'SIGCONT');
  hostPid = undefined;
});
