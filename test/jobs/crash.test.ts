/**
 * kill -9 of the server while jobs are queued and running, then a restart: every job reaches a
 * terminal state, none runs twice, and no worker process or directory is left behind.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, it } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { alive, hostPids } from '../helpers/processes.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

const dir = scratchDir('berth-crash-');
const dataDir = join(dir, 'data');
const marks = join(dir, 'marks');
let server: ServerProcess | undefined;

after(async () => {
  if (server) await killHard(server);
  rmSync(dir, { recursive: true, force: true });
});

it('survives kill -9 with jobs queued and running', async () => {
  sharedFile(marks);
  server = await spawnServer(dataDir);
  const { api, token } = server;
  await call(api, token, 'POST', '/cluster-queues', { name: 'one', quota: { jobs: 1 } });
  await call(api, token, 'POST', '/projects', { name: 'crash', clusterQueue: 'one' });
  // Each run appends "<name> <pid>" to the marks file, so a second run would show.
  const run = (name: string, rest: string) => `echo "${name} $$" >> ${marks}; ${rest}`;
  const running = await submit(api, token, 'crash', { script: run('running', 'sleep 300') });
  await waitFor(
    'the first job to run',
    async () => (await getJob(api, token, running.id)).state === 'running',
  );
  const queued = [];
  for (let i = 0; i < 3; i++)
    queued.push(await submit(api, token, 'crash', { script: run(`queued${i}`, 'true') }));
  await waitFor('the first job to record its pid', () => readFileSync(marks, 'utf8').includes('running '));
  // As the host numbers it: the job may see its own pid namespace's numbers.
  const [pid] = hostPids(server, running.id, [Number(/running (\d+)/.exec(readFileSync(marks, 'utf8'))![1])]);
  assert.ok(pid !== undefined && alive(pid), "the running job's process is found");

  await killHard(server);
  server = undefined;
  // The agent host notices its server is gone and stops the job it ran.
  await waitFor('the orphaned job to be stopped', () => !alive(pid));

  server = await spawnServer(dataDir);
  const r = await waitDone(server.api, server.token, running.id);
  assert.equal(r.state, 'failed');
  assert.match(r.reason, /server restarted/);
  for (const q of queued) assert.equal((await waitDone(server.api, server.token, q.id)).state, 'succeeded');

  const lines = readFileSync(marks, 'utf8').trim().split('\n');
  const names = lines.map((l) => l.split(' ')[0]).sort();
  assert.deepEqual(names, ['queued0', 'queued1', 'queued2', 'running'], 'every job ran exactly once');
  await waitFor(
    'no worker directory left',
    () => !existsSync(join(dataDir, 'workers')) || readdirSync(join(dataDir, 'workers')).length === 0,
  );
  const workers = (await call<{ state: string }[]>(server.api, server.token, 'GET', '/workers')).body;
  assert.ok(workers.length >= 4);
  assert.ok(
    workers.every((w) => w.state === 'destroyed'),
    JSON.stringify(workers),
  );
  writeFileSync(join(dir, 'done'), '');
});

it('runs again after kill -9 a job with infrastructure retries, and keeps a retry waiting out its backoff', async () => {
  if (server) await killHard(server); // the first test's, restarted
  const data = join(dir, 'data-retries');
  const runs = join(dir, 'runs');
  sharedFile(runs);
  server = await spawnServer(data);
  const { api, token } = server;
  const counted = (name: string, rest: string) => `echo ${name} >> ${runs}; ${rest}`;
  const lost = await submit(api, token, 'default', {
    // The first run waits to be killed; the second, after the restart, succeeds.
    script: counted('lost', `[ $(grep -c lost ${runs}) -ge 2 ] || sleep 300`),
    infraRetries: 1,
    retryBackoffSeconds: 0,
  });
  const backoff = await submit(api, token, 'default', {
    script: counted('backoff', `[ $(grep -c backoff ${runs}) -ge 2 ] || exit 9`),
    retries: 1,
    retryBackoffSeconds: 4,
  });
  await waitFor('the first job to run', async () => (await getJob(api, token, lost.id)).state === 'running');
  const retryAt = await waitFor('the second job to wait for its retry', async () => {
    const j = (await getJob(api, token, backoff.id)) as unknown as { retryAt: string | null };
    return j.retryAt ?? undefined;
  });
  await killHard(server);
  server = undefined;

  server = await spawnServer(data);
  const first = await waitDone(server.api, server.token, lost.id);
  assert.equal(first.state, 'succeeded', first.reason);
  const second = await waitDone(server.api, server.token, backoff.id);
  assert.equal(second.state, 'succeeded', second.reason);
  // Its second run came after the backoff it was given before the crash.
  assert.ok(Date.parse(second.startedAt!) >= Date.parse(retryAt), `${second.startedAt} before ${retryAt}`);
  const attempts = (
    await call<{ reason: string; charged: string }[]>(
      server.api,
      server.token,
      'GET',
      `/jobs/${lost.id}/attempts`,
    )
  ).body;
  assert.equal(attempts[0]!.charged, 'infrastructure');
  assert.match(attempts[0]!.reason, /server restarted/);
  assert.deepEqual(readFileSync(runs, 'utf8').trim().split('\n').sort(), [
    'backoff',
    'backoff',
    'lost',
    'lost',
  ]);
});
