/**
 * The simulated factory end to end: real server, real store, the controller's agent protocol in
 * process. Jobs run for the time their command declares, obey cancel and preemption, need no job
 * token, and a restart leaves nothing behind.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { refuseInserts, storeOf } from '../helpers/db.js';
import { simulatedMillis } from '../../src/factories/simulated.js';
import { resolveConfig } from '../../src/config/load.js';
import {
  EVICTED_ONCE_THEN_SUCCEEDED,
  events,
  getJob,
  submit,
  waitDone,
  type JobView,
} from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

/** heartbeatSeconds: 1, so a run of a few seconds outlives the heartbeat deadline several times. */
const SIMULATED = [
  'graceSeconds: 1',
  'heartbeatSeconds: 1',
  'factories:',
  '  sim: { kind: simulated }',
  'targets:',
  '  sim: { factory: sim }',
].join('\n');

const ms = (iso: string | null): number => {
  assert.ok(iso !== null, 'timestamp is set');
  return Date.parse(iso);
};

describe('the simulated factory, configured', () => {
  it('reads the duration of `sleep N` and nothing else', () => {
    assert.equal(simulatedMillis(['sleep', '2']), 2000);
    assert.equal(simulatedMillis(['sleep', '0.2']), 200);
    assert.equal(simulatedMillis(['/bin/sleep', '1.5']), 1500);
    assert.equal(simulatedMillis(['sleep', '0']), 0);
    for (const other of [['true'], ['sleep'], ['sleep', '1m'], ['sleep', '1', '2'], ['sh', '-c', 'sleep 5']])
      assert.equal(simulatedMillis(other), 0, JSON.stringify(other));
  });

  it('has room for large scenarios by default', () => {
    const config = resolveConfig(
      { factories: { sim: { kind: 'simulated' } }, targets: { sim: { factory: 'sim' } } },
      {},
    );
    assert.deepEqual(config.factories.sim, { kind: 'simulated', capacity: 10_000 });
  });
});

describe('a simulated job', () => {
  const server = useTestServer({ config: SIMULATED });
  const api = () => server().api;
  const admin = () => server().adminToken;

  it('runs for the time its command declares, heartbeating, and succeeds without a job token', async () => {
    const job = await submit(api(), admin(), 'default', { command: ['sleep', '2.5'] });
    const done = await waitDone(api(), admin(), job.id);
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(done.exitCode, 0);
    const ran = ms(done.finishedAt) - ms(done.startedAt);
    // Longer than the heartbeat deadline (1 s): the heartbeats kept it alive.
    assert.ok(ran >= 2500, `ran ${ran} ms, declared 2500`);
    assert.deepEqual(
      (await events(api(), admin(), job.id)).map((e) => e.type),
      ['submitted', 'admitted', 'worker-creating', 'started', 'succeeded'],
    );
    assert.equal(done.worker?.state, 'destroyed');
    // Nothing outside the server speaks for an in-process worker: no token was ever made.
    const jobTokens = await storeOf(server())
      .db.selectFrom('api_tokens')
      .select('hash')
      .where('job_id', 'is not', null)
      .execute();
    assert.equal(jobTokens.length, 0);
  });

  it('exits 0 at once for any other command', async () => {
    const job = await submit(api(), admin(), 'default', { command: ['sh', '-c', 'exit 3'] });
    const done = await waitDone(api(), admin(), job.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.exitCode, 0);
    assert.ok(ms(done.finishedAt) - ms(done.startedAt) < 1000);
  });

  it('ends at its timeout when it declares a longer run', async () => {
    const job = await submit(api(), admin(), 'default', { command: ['sleep', '3600'], timeoutSeconds: 1 });
    const done = await waitDone(api(), admin(), job.id);
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /timed out after 1s/);
    assert.ok(ms(done.finishedAt) - ms(done.startedAt) >= 1000);
  });

  it('stops promptly when cancelled, reporting cancelled', async () => {
    const job = await submit(api(), admin(), 'default', { command: ['sleep', '3600'] });
    await waitFor('the job to run', async () => (await getJob(api(), admin(), job.id)).state === 'running');
    const cancelledAt = Date.now();
    const res = await call(api(), admin(), 'POST', `/jobs/${job.id}/cancel`);
    assert.equal(res.status, 200, res.text);
    const done = await waitDone(api(), admin(), job.id, 5000);
    assert.equal(done.state, 'cancelled');
    assert.match(done.reason, /cancelled by admin/);
    const took = ms(done.finishedAt) - cancelledAt;
    assert.ok(took < 1000, `ended ${took} ms after the cancel`);
    assert.equal(done.worker?.state, 'destroyed');
  });
});

describe('a transition whose event cannot be written', () => {
  const server = useTestServer({ config: `${SIMULATED}\nlogLevel: fatal\n` });

  it('is rolled back alone, while the transitions written with it land', async () => {
    // Refuses the `started` event of jobs named "refused": their start must not be recorded.
    const refusal = await refuseInserts(
      storeOf(server()),
      'refuse_start',
      'events',
      "NEW.type = 'started' AND (SELECT name FROM jobs WHERE id = NEW.job_id) = 'refused'",
      'event refused by test',
    );
    try {
      const jobs = await Promise.all(
        ['ok', 'refused', 'ok', 'ok'].map((name) =>
          submit(server().api, server().adminToken, 'default', { name, command: ['sleep', '0'] }),
        ),
      );
      const done = await Promise.all(jobs.map((j) => waitDone(server().api, server().adminToken, j.id)));
      const refused = done[1]!;
      assert.equal(refused.state, 'failed');
      assert.equal(refused.startedAt, null, 'its start was never recorded');
      assert.match(refused.reason, /event refused by test/);
      assert.deepEqual(
        (await events(server().api, server().adminToken, refused.id)).map((e) => e.type),
        ['submitted', 'admitted', 'worker-creating', 'failed'],
      );
      for (const j of done.filter((_, i) => i !== 1)) {
        assert.equal(j.state, 'succeeded');
        assert.deepEqual(
          (await events(server().api, server().adminToken, j.id)).map((e) => e.type),
          ['submitted', 'admitted', 'worker-creating', 'started', 'succeeded'],
        );
      }
    } finally {
      await refusal.drop();
    }
  });
});

describe('preemption of a simulated job', () => {
  const server = useTestServer({ config: SIMULATED });
  const req = <T>(method: string, path: string, body?: unknown) =>
    call<T>(server().api, server().adminToken, method, path, body);

  it('requeues the victim, which runs again and succeeds', async () => {
    const q = await req('POST', '/cluster-queues', {
      name: 'pq',
      quota: { cpu: '1' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    assert.equal(q.status, 201, q.text);
    assert.equal((await req('POST', '/projects', { name: 'pq', clusterQueue: 'pq' })).status, 201);
    const run = (seconds: string, priority: number) =>
      submit(server().api, server().adminToken, 'pq', {
        command: ['sleep', seconds],
        requests: { cpu: '1' },
        priority,
      });

    const low = await run('3', 0);
    await waitFor(
      'the low job to run',
      async () => (await req<JobView>('GET', `/jobs/${low.id}`)).body.state === 'running',
    );
    const high = await run('0.2', 10);

    const highDone = await waitDone(server().api, server().adminToken, high.id);
    assert.equal(highDone.state, 'succeeded');
    const lowDone = await waitDone(server().api, server().adminToken, low.id);
    assert.equal(lowDone.state, 'succeeded');
    const lowJob = (await req<{ attempts: number }>('GET', `/jobs/${low.id}`)).body;
    assert.equal(lowJob.attempts, 1);
    const timeline = await events(server().api, server().adminToken, low.id);
    assert.deepEqual(
      timeline.map((e) => e.type),
      EVICTED_ONCE_THEN_SUCCEEDED,
    );
    assert.match(
      timeline.find((e) => e.type === 'requeued')!.message,
      new RegExp(`preempted by job ${high.id}\\b`),
    );
    // The victim's second run came after the preemptor and lasted its whole declared time.
    assert.ok(ms(lowDone.startedAt) >= ms(highDone.startedAt));
    assert.ok(ms(lowDone.finishedAt) - ms(lowDone.startedAt) >= 3000);
  });
});

describe('a restart with simulated jobs running', () => {
  const dir = scratchDir('berth-sim-crash-');
  const configFile = join(dir, 'berth.yaml');
  writeFileSync(configFile, `${SIMULATED}\ndefaultTarget: sim\n`);
  let server: ServerProcess | undefined;
  after(async () => {
    if (server) await killHard(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('fails the jobs that ran, runs the rest, and leaves no worker behind', async () => {
    server = await spawnServer(join(dir, 'data'), configFile);
    const first = server;
    const post = (path: string, body: unknown) => call(first.api, first.token, 'POST', path, body);
    assert.equal((await post('/cluster-queues', { name: 'two', quota: { jobs: 2 } })).status, 201);
    assert.equal((await post('/projects', { name: 'crash', clusterQueue: 'two' })).status, 201);
    const running = [];
    for (let i = 0; i < 2; i++)
      running.push(await submit(first.api, first.token, 'crash', { command: ['sleep', '3600'] }));
    for (const j of running)
      await waitFor(
        `job ${j.id} to run`,
        async () => (await getJob(first.api, first.token, j.id)).state === 'running',
      );
    const queued = [];
    for (let i = 0; i < 3; i++)
      queued.push(await submit(first.api, first.token, 'crash', { command: ['sleep', '0.1'] }));

    await killHard(first);
    server = await spawnServer(join(dir, 'data'), configFile);
    const { api, token } = server;
    for (const j of running) {
      const done = await waitDone(api, token, j.id);
      assert.equal(done.state, 'failed');
      assert.match(done.reason, /server restarted/);
    }
    for (const j of queued) assert.equal((await waitDone(api, token, j.id)).state, 'succeeded');
    const workers = (await call<{ jobId: number; state: string }[]>(api, token, 'GET', '/workers')).body;
    assert.equal(workers.length, 5, JSON.stringify(workers));
    assert.ok(
      workers.every((w) => w.state === 'destroyed'),
      JSON.stringify(workers),
    );
    const factories = (await call<{ name: string; inUse: number }[]>(api, token, 'GET', '/factories')).body;
    assert.deepEqual(factories, [{ ...factories[0], name: 'sim', inUse: 0 }]);
  });
});
