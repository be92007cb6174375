/**
 * Gang jobs (`workers: N`) end to end on the local factory, over real HTTP with real processes:
 * every rank runs with its rank, the world size and the hosts; the job succeeds only when every
 * rank does; one failing rank stops the others; the N workers are taken from the factory all at
 * once or not at all, and count N times against quota.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { alive, hostPids } from '../helpers/processes.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

let s: TestServer;
let scratch: string;

const logsOf = async (id: number): Promise<string> =>
  (await call(s.api, s.adminToken, 'GET', `/jobs/${id}/logs`)).text;

before(async () => {
  scratch = scratchDir('berth-gang-');
  s = await startTestServer({ config: localFactoryConfig(4) });
});
after(async () => {
  await s.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe('a gang job', () => {
  it('runs every rank with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS, and succeeds when all do', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: 'echo "rank $BERTH_RANK of $BERTH_WORLD_SIZE on $BERTH_HOSTS"; printf "no newline $BERTH_RANK"',
      workers: 3,
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded', done.reason);
    const view = await call<{ workers: number }>(s.api, s.adminToken, 'GET', `/jobs/${job.id}`);
    assert.equal(view.body.workers, 3);
    const hosts = [hostname(), hostname(), hostname()].join(',');
    const lines = (await logsOf(job.id)).split('\n').filter(Boolean).sort();
    // Each line carries its rank, also a last line without its newline.
    assert.deepEqual(lines, [
      `0: no newline 0`,
      `0: rank 0 of 3 on ${hosts}`,
      `1: no newline 1`,
      `1: rank 1 of 3 on ${hosts}`,
      `2: no newline 2`,
      `2: rank 2 of 3 on ${hosts}`,
    ]);
    const timeline = await events(s.api, s.adminToken, job.id);
    assert.deepEqual(
      timeline.map((e) => e.type),
      ['submitted', 'admitted', 'worker-creating', 'started', 'succeeded'],
    );
    assert.match(timeline[2]!.message, /for 3 ranks/);
    assert.match(timeline[3]!.message, /\(3 ranks\)/);
    assert.equal(done.worker?.state, 'destroyed');
    assert.equal(existsSync(join(s.dataDir, 'workers', String(done.worker?.id))), false);
  });

  it('fails when one rank fails, naming it, and stops the others', async () => {
    const pids = sharedFile(join(scratch, 'pids'));
    const gate = join(scratch, 'rank-1-fails');
    const job = await submit(s.api, s.adminToken, 'default', {
      script: `echo $$ >> ${pids}; if [ "$BERTH_RANK" = 1 ]; then while [ ! -e ${gate} ]; do sleep 0.05; done; exit 3; fi; sleep 60`,
      workers: 3,
    });
    // Every rank's process as the host numbers it (each may see a pid namespace of its own).
    const ranPids = await waitFor('every rank to run', () => {
      const seen = readFileSync(pids, 'utf8').trim().split('\n').filter(Boolean).map(Number);
      const found = seen.length === 3 ? hostPids(s, job.id, seen) : [];
      return found.length === 3 ? found : undefined;
    });
    assert.ok(ranPids.every(alive));
    const started = Date.now();
    writeFileSync(gate, '');
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'failed');
    assert.equal(done.reason, 'rank 1: exited with code 3');
    assert.equal(done.exitCode, 3);
    assert.ok(Date.now() - started < 30_000, 'the other ranks were stopped, not waited for');
    await waitFor('every rank to be gone', () => ranPids.every((p) => !alive(p)));
  });

  it('is cancelled as a whole', async () => {
    const job = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '60'], workers: 2 });
    await waitFor(
      'the gang to run',
      async () => (await getJob(s.api, s.adminToken, job.id)).state === 'running',
    );
    await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'cancelled');
    assert.match(done.reason, /cancelled by/);
  });

  it('takes its workers all at once: it waits while they do not fit, and nobody behind overtakes it', async () => {
    const gate = join(scratch, 'gate');
    // One worker of the factory's four is busy: a gang of four cannot start.
    const blocker = await submit(s.api, s.adminToken, 'default', {
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    });
    await waitFor(
      'the blocker to run',
      async () => (await getJob(s.api, s.adminToken, blocker.id)).state === 'running',
    );
    const gang = await submit(s.api, s.adminToken, 'default', { command: ['true'], workers: 4 });
    await waitFor('the gang to wait for its workers', async () => {
      const j = await getJob(s.api, s.adminToken, gang.id);
      return (
        j.state === 'admitted' &&
        /waiting for 4 workers at once from factory local: 1\/4 in use; position 1/.test(j.reason)
      );
    });
    // A one-worker job after it would fit in the three free workers, but must not pass the gang.
    const small = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    await waitFor('the small job to wait behind the gang', async () => {
      const j = await getJob(s.api, s.adminToken, small.id);
      return j.state === 'admitted' && /position 2/.test(j.reason);
    });
    assert.equal((await getJob(s.api, s.adminToken, gang.id)).worker, null, 'no worker made for a part');
    writeFileSync(gate, '');
    assert.equal((await waitDone(s.api, s.adminToken, gang.id)).state, 'succeeded');
    assert.equal((await waitDone(s.api, s.adminToken, small.id)).state, 'succeeded');
    const gangStart = (await events(s.api, s.adminToken, gang.id)).find((e) => e.type === 'started')!;
    const smallStart = (await events(s.api, s.adminToken, small.id)).find((e) => e.type === 'started')!;
    assert.ok(Date.parse(gangStart.at) <= Date.parse(smallStart.at), 'the gang started first');
  });
});

describe('a gang against quota and capacity', () => {
  it('counts its requests once per worker', async () => {
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'cpu4', quota: { cpu: '4' } });
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'cpu4', clusterQueue: 'cpu4' });
    const gate = join(scratch, 'gate-cpu');
    const gang = await submit(s.api, s.adminToken, 'cpu4', {
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
      workers: 3,
      requests: { cpu: '1' },
    });
    await waitFor(
      'the gang to run',
      async () => (await getJob(s.api, s.adminToken, gang.id)).state === 'running',
    );
    const queue = await call<{ usage: Record<string, string> }>(
      s.api,
      s.adminToken,
      'GET',
      '/cluster-queues/cpu4',
    );
    assert.equal(queue.body.usage.cpu, '3');
    // Two more cpus do not fit beside three: it waits for quota.
    const next = await submit(s.api, s.adminToken, 'cpu4', { command: ['true'], requests: { cpu: '2' } });
    assert.equal((await getJob(s.api, s.adminToken, next.id)).state, 'queued');
    writeFileSync(gate, '');
    assert.equal((await waitDone(s.api, s.adminToken, gang.id)).state, 'succeeded');
    assert.equal((await waitDone(s.api, s.adminToken, next.id)).state, 'succeeded');
  });

  const refused: [string, Record<string, unknown>, number, RegExp][] = [
    [
      'more workers than its target ever has',
      { command: ['true'], workers: 5 },
      422,
      /workers: 5 is more than target "local" can ever give at once \(its factory's capacity is 4\)/,
    ],
    [
      'more than the queue can ever grant, counted per worker',
      { command: ['true'], workers: 3, requests: { cpu: '2' } },
      422,
      /requests\.cpu: 2 × 3 workers is more than cluster queue "cpu4" can ever grant \(4\)/,
    ],
    ['no workers', { command: ['true'], workers: 0 }, 400, /workers/],
    ['a fraction of a worker', { command: ['true'], workers: 1.5 }, 400, /workers/],
  ];
  for (const [name, body, status, message] of refused) {
    it(`is refused: ${name}`, async () => {
      const r = await call<{ error: { message: string } }>(
        s.api,
        s.adminToken,
        'POST',
        '/projects/cpu4/jobs',
        body,
      );
      assert.equal(r.status, status, r.text);
      assert.match(r.body.error.message, message);
    });
  }
});
