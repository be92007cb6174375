/**
 * A restart with more queued jobs than one page of the rebuild reads at a time (it reads them in
 * pages of 1,000 by id: store/queries/jobs.ts activeJobPages): every job is back, in the same
 * admission order; and jobs that share a spec (an array's tasks) or not, or wait for a
 * dependency, carry on as they were.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, it } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('berth-restart-many-');
const dataDir = join(dir, 'data');
const configFile = join(dir, 'berth.yaml');
writeFileSync(configFile, 'factories:\n  local: { kind: local, capacity: 2 }\n');
let server: ServerProcess | undefined;

after(async () => {
  if (server) await killHard(server);
  rmSync(dir, { recursive: true, force: true });
});

const TASKS = 2_500;

interface Pending {
  id?: number;
  position: number;
}

/** Queue `held`'s pending jobs at positions 1491–2490; undefined while the server does not lead. */
async function pendingIds(s: ServerProcess): Promise<number[] | undefined> {
  const path = '/cluster-queues/held/pending?limit=1000&offset=1490';
  const r = await call<Pending[]>(s.api, s.token, 'GET', path);
  return r.status === 200 ? r.body.map((p) => p.id!) : undefined;
}

it('brings back every queued job, in order, after kill -9 with thousands queued', async () => {
  server = await spawnServer(dataDir, configFile);
  const { api, token } = server;
  await call(api, token, 'POST', '/cluster-queues', { name: 'held', quota: { jobs: 1 }, stopPolicy: 'Hold' });
  await call(api, token, 'POST', '/cluster-queues', { name: 'work', quota: { jobs: 4 } });
  await call(api, token, 'POST', '/projects', { name: 'sweep', clusterQueue: 'held' });
  await call(api, token, 'POST', '/projects', { name: 'quick', clusterQueue: 'work' });
  const array = await submit(api, token, 'sweep', {
    command: ['true'],
    requests: { cpu: '1' },
    array: `0-${TASKS - 1}`,
  });
  const single = await submit(api, token, 'sweep', { command: ['echo', 'one'], priority: 5 });
  const done = await submit(api, token, 'quick', { command: ['true'] });
  assert.equal((await waitDone(api, token, done.id)).state, 'succeeded');
  // Waits for a task that is queued: it is kept outside the scheduler until that task ends.
  const dependent = await submit(api, token, 'sweep', { command: ['true'], dependsOn: [array.id + 1] });
  const figures = async (s: ServerProcess) =>
    (await call<{ pending: number }>(s.api, s.token, 'GET', '/cluster-queues/held')).body.pending;
  assert.equal(await figures(server), TASKS + 1);
  const before = await pendingIds(server);
  assert.equal(before?.length, 1000);

  await killHard(server);
  server = await spawnServer(dataDir, configFile);
  const s = server;
  // On PostgreSQL the new server leads once the killed one's lease has run out, and then rebuilds.
  await waitFor(
    'the same jobs pending in the same admission order',
    async () => JSON.stringify(await pendingIds(s)) === JSON.stringify(before),
    60_000,
  );
  await waitFor('every job pending again', async () => (await figures(s)) === TASKS + 1);
  assert.equal((await getJob(s.api, s.token, single.id)).position, 1, 'its priority puts it first');
  const waiting = await getJob(s.api, s.token, dependent.id);
  assert.equal(waiting.state, 'queued');
  assert.match(waiting.reason, new RegExp(`job ${array.id + 1}`));
  // Its dependency is cancelled: it cannot succeed any more, so it is cancelled too.
  await call(s.api, s.token, 'POST', `/jobs/${array.id + 1}/cancel`);
  assert.equal((await waitDone(s.api, s.token, dependent.id)).state, 'cancelled');
  // Nothing else moved: the held queue still holds every other job.
  assert.equal(await figures(s), TASKS);
  assert.equal((await getJob(s.api, s.token, done.id)).state, 'succeeded');
});
