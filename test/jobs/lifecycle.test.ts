/**
 * Jobs end to end over real HTTP: submit → quota → local factory → agent → logs → cleanup,
 * against a real server with a real SQLite file and real processes.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { alive, hostPids } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratch.js';

let s: TestServer;
let scratch: string;

before(async () => {
  scratch = scratchDir('berth-jobs-');
  const config = join(scratch, 'berth.yaml');
  writeFileSync(
    config,
    [
      'graceSeconds: 1',
      'heartbeatSeconds: 10',
      'factories:',
      '  local: { kind: local, capacity: 4 }',
      'targets:',
      '  local: { factory: local }',
      '  gpu: { factory: local, privilege: target.gpu }',
      '  capped: { factory: local, defaultTimeout: 1s }',
    ].join('\n'),
  );
  s = await startTestServer({ configFile: config });
});
after(async () => s.close());

describe('a job', () => {
  it('runs, keeps its output, reports its exit code and is cleaned up', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      command: ['sh', '-c', 'echo hello; echo oops >&2; exit 3'],
    });
    assert.equal(job.state, 'queued');
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'failed');
    assert.equal(done.exitCode, 3);
    assert.equal(done.reason, 'exited with code 3');
    const logs = await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`);
    assert.match(logs.text, /hello\n/);
    assert.match(logs.text, /oops\n/);
    assert.deepEqual(
      (await events(s.api, s.adminToken, job.id)).map((e) => e.type),
      ['submitted', 'admitted', 'worker-creating', 'started', 'failed'],
    );
    assert.equal(done.worker?.state, 'destroyed');
    assert.equal(existsSync(join(s.dataDir, 'workers', String(done.worker?.id))), false);
  });

  it('succeeds with exit code 0 and gets the environment it asked for', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      command: ['sh', '-c', 'echo "$GREETING $BERTH_JOB_ID"'],
      env: { GREETING: 'hi' },
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.exitCode, 0);
    assert.equal((await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`)).text, `hi ${job.id}\n`);
  });

  it('fails clearly when its command does not exist', async () => {
    const job = await submit(s.api, s.adminToken, 'default', { command: ['no-such-command-berth'] });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'failed');
    assert.equal(done.exitCode, 127);
    assert.match(done.reason, /command not found/);
  });

  it('streams its log while it runs', async () => {
    const gate = join(scratch, 'gate-follow');
    const job = await submit(s.api, s.adminToken, 'default', {
      script: `echo first; while [ ! -e ${gate} ]; do sleep 0.05; done; echo second`,
    });
    const res = await fetch(`${s.api}/jobs/${job.id}/logs?follow=true`, {
      headers: { authorization: `Bearer ${s.adminToken}` },
    });
    assert.equal(res.status, 200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('first\n')) {
      const { value, done } = await reader.read();
      assert.equal(done, false, 'stream ended before the first line');
      text += decoder.decode(value, { stream: true });
    }
    // The job is still running (it waits for the gate), so "first" arrived live.
    assert.equal((await getJob(s.api, s.adminToken, job.id)).state, 'running');
    writeFileSync(gate, '');
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    assert.equal(text, 'first\nsecond\n');
  });

  it('returns the same job for the same idempotency key', async () => {
    const a = await submit(s.api, s.adminToken, 'default', { command: ['true'], idempotencyKey: 'k-1' });
    const r = await call<{ id: number }>(s.api, s.adminToken, 'POST', '/projects/default/jobs', {
      command: ['true'],
      idempotencyKey: 'k-1',
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.id, a.id);
  });

  it('waits for the jobs it depends on, and is cancelled when one fails', async () => {
    const gate = join(scratch, 'gate-dep');
    const first = await submit(s.api, s.adminToken, 'default', {
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    });
    const second = await submit(s.api, s.adminToken, 'default', { command: ['true'], dependsOn: [first.id] });
    assert.match(
      (await getJob(s.api, s.adminToken, second.id)).reason,
      new RegExp(`waiting for job ${first.id} to succeed`),
    );
    writeFileSync(gate, '');
    assert.equal((await waitDone(s.api, s.adminToken, second.id)).state, 'succeeded');
    const failing = await submit(s.api, s.adminToken, 'default', { command: ['false'] });
    const dependent = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      dependsOn: [failing.id],
    });
    const d = await waitDone(s.api, s.adminToken, dependent.id);
    assert.equal(d.state, 'cancelled');
    assert.match(d.reason, new RegExp(`dependency job ${failing.id} failed`));
  });

  it('runs after any end (dependsOnAny), or only after a failure (dependsOnFailed)', async () => {
    const gate = join(scratch, 'gate-dep-kinds');
    const failing = await submit(s.api, s.adminToken, 'default', {
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done; exit 4`,
    });
    const passing = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    await waitDone(s.api, s.adminToken, passing.id);
    const afterAny = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      dependsOnAny: [failing.id],
    });
    const afterFailure = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      dependsOnFailed: [failing.id],
    });
    const both = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      dependsOn: [passing.id],
      dependsOnAny: [failing.id],
    });
    assert.equal(
      (await getJob(s.api, s.adminToken, afterFailure.id)).reason,
      `waiting for job ${failing.id} to fail`,
    );
    assert.equal(
      (await getJob(s.api, s.adminToken, both.id)).reason,
      `waiting for job ${failing.id} to end`,
      'the dependency that succeeded no longer holds it',
    );
    writeFileSync(gate, '');
    for (const j of [afterAny, afterFailure, both])
      assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
    // After a success, a job that was to run only on failure is cancelled, naming the job.
    const onFailure = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      dependsOnFailed: [passing.id],
    });
    const c = await waitDone(s.api, s.adminToken, onFailure.id);
    assert.equal(c.state, 'cancelled');
    assert.equal(
      c.reason,
      `dependency job ${passing.id} succeeded, and this job was to run only if it failed`,
    );
    const view = await call<{ dependsOnAny: number[]; dependsOnFailed: number[] }>(
      s.api,
      s.adminToken,
      'GET',
      `/jobs/${both.id}`,
    );
    assert.deepEqual([view.body.dependsOnAny, view.body.dependsOnFailed], [[failing.id], []]);
  });
});

describe('stopping a job', () => {
  /**
   * A job whose process tree has a background child; both pids are written to `dir`/pids, by a
   * rename so that the test never reads the file half written (it did: an empty parent file).
   */
  const treeScript = (dir: string) =>
    `trap '' TERM; sleep 300 & echo "$! $$" > ${dir}/pids.part && mv ${dir}/pids.part ${dir}/pids; wait`;

  /** The job's two processes, as the host numbers them (it may see its own pid namespace's). */
  async function pidsOf(dir: string, jobId: number): Promise<number[]> {
    const seen = await waitFor('the job to write its pids', () =>
      existsSync(join(dir, 'pids'))
        ? readFileSync(join(dir, 'pids'), 'utf8')
            .trim()
            .split(' ')
            .map(Number)
            .filter((n) => n > 0)
        : undefined,
    );
    return hostPids(s, jobId, seen);
  }

  it('cancel ends the whole process tree, even one that ignores SIGTERM', async () => {
    const dir = scratchDir('cancel-', scratch);
    const job = await submit(s.api, s.adminToken, 'default', { script: treeScript(dir) });
    const pids = await pidsOf(dir, job.id);
    assert.equal(pids.length, 2);
    assert.ok(pids.every(alive));
    // The heartbeats the agent sends from the cancel on: the server answers each at once.
    const port = s.server.controller;
    const heartbeat = port.agentHeartbeat.bind(port);
    let beats = 0;
    port.agentHeartbeat = (jobId, waitMs, rank) => {
      if (jobId === job.id) beats++;
      return heartbeat(jobId, waitMs, rank);
    };
    try {
      const r = await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
      assert.equal(r.status, 200);
      const done = await waitDone(s.api, s.adminToken, job.id);
      assert.equal(done.state, 'cancelled');
      assert.match(done.reason, /cancelled by admin/);
    } finally {
      port.agentHeartbeat = heartbeat;
    }
    await waitFor('the job processes to be gone', () => pids.every((p) => !alive(p)));
    // Its 1 s grace: a poll or two at the heartbeat's pace (every 3 s), not a poll a millisecond.
    assert.ok(beats <= 3, `${beats} heartbeats while the job was stopping`);
  });

  it('a timeout ends the whole process tree and fails the job', async () => {
    const dir = scratchDir('timeout-', scratch);
    const job = await submit(s.api, s.adminToken, 'default', { script: treeScript(dir), timeoutSeconds: 1 });
    const pids = await pidsOf(dir, job.id);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /timed out after 1s/);
    await waitFor('the job processes to be gone', () => pids.every((p) => !alive(p)));
  });

  it("a job that gives no timeout gets its target's defaultTimeout; one it gives wins", async () => {
    const dir = scratchDir('default-timeout-', scratch);
    const job = await submit(s.api, s.adminToken, 'default', { target: 'capped', script: treeScript(dir) });
    assert.equal(job.timeoutSeconds, 1, 'the job shows the timeout it got');
    const submitted = (await events(s.api, s.adminToken, job.id)).find((e) => e.type === 'submitted');
    assert.match(
      submitted?.message ?? '',
      /^submitted by admin to cluster queue default; timeout 1s, target capped's defaultTimeout$/,
    );
    const pids = await pidsOf(dir, job.id);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /timed out after 1s/);
    await waitFor('the job processes to be gone', () => pids.every((p) => !alive(p)));
    const own = await submit(s.api, s.adminToken, 'default', {
      target: 'capped',
      script: 'sleep 2; echo slept',
      timeoutSeconds: 30,
    });
    assert.equal(own.timeoutSeconds, 30);
    const ownSubmitted = (await events(s.api, s.adminToken, own.id)).find((e) => e.type === 'submitted');
    assert.equal(ownSubmitted?.message, 'submitted by admin to cluster queue default');
    const ownDone = await waitDone(s.api, s.adminToken, own.id);
    assert.equal(ownDone.state, 'succeeded', ownDone.reason);
    // An array's tasks get it too, and its one submitted event says so.
    const array = await submit(s.api, s.adminToken, 'default', {
      target: 'capped',
      command: ['true'],
      array: '0-1',
    });
    assert.equal(array.timeoutSeconds, 1);
    const arraySubmitted = (await events(s.api, s.adminToken, array.id)).find((e) => e.type === 'submitted');
    assert.match(
      arraySubmitted?.message ?? '',
      /^array of 2 tasks \(0-1\) submitted by admin .*; timeout 1s, target capped's defaultTimeout$/,
    );
    // Other targets keep none.
    const open = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    assert.equal(open.timeoutSeconds, null);
    // GET /targets says so.
    const targets = await call<{ name: string; reuse: boolean; defaultTimeoutSeconds: number | null }[]>(
      s.api,
      s.adminToken,
      'GET',
      '/targets',
    );
    const of = (name: string) => targets.body.find((t) => t.name === name);
    assert.deepEqual([of('capped')?.defaultTimeoutSeconds, of('capped')?.reuse], [1, false]);
    assert.equal(of('local')?.defaultTimeoutSeconds, null);
  });

  it('cancelling a queued job never runs it', async () => {
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', {
      name: 'held',
      quota: { cpu: '1' },
      stopPolicy: 'Hold',
    });
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'held', clusterQueue: 'held' });
    const marker = join(scratch, 'never-ran');
    const job = await submit(s.api, s.adminToken, 'held', { command: ['touch', marker] });
    assert.equal((await getJob(s.api, s.adminToken, job.id)).state, 'queued');
    await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'cancelled');
    assert.equal(existsSync(marker), false);
    assert.equal((await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`)).status, 409);
  });
});

describe('quota', () => {
  it('with jobs=2, ten jobs never run more than two at once, and all succeed', async () => {
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'two', quota: { jobs: 2 } });
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'two', clusterQueue: 'two' });
    const ids: number[] = [];
    for (let i = 0; i < 10; i++)
      ids.push((await submit(s.api, s.adminToken, 'two', { command: ['sleep', '1'] })).id);
    const done = await Promise.all(ids.map((id) => waitDone(s.api, s.adminToken, id, 60_000)));
    assert.ok(done.every((j) => j.state === 'succeeded'));
    // From the timeline: an admission holds quota until the job ends; count overlaps.
    const points: [number, number][] = [];
    for (const id of ids) {
      const ev = await events(s.api, s.adminToken, id);
      const admitted = ev.find((e) => e.type === 'admitted');
      const ended = ev.find((e) => e.type === 'succeeded');
      assert.ok(admitted && ended);
      points.push([Date.parse(admitted.at), 1], [Date.parse(ended.at), -1]);
    }
    points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let running = 0;
    let peak = 0;
    for (const [, d] of points) peak = Math.max(peak, (running += d));
    assert.ok(peak <= 2, `peak concurrency ${peak}`);
    assert.equal(peak, 2, 'quota allows two at once; the factory has room for four');
  });

  it('shows position and reason while a job waits', async () => {
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'one', quota: { jobs: 1 } });
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'one', clusterQueue: 'one' });
    const gate = join(scratch, 'gate-one');
    const first = await submit(s.api, s.adminToken, 'one', {
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    });
    await waitFor(
      'first to run',
      async () => (await getJob(s.api, s.adminToken, first.id)).state === 'running',
    );
    const second = await submit(s.api, s.adminToken, 'one', { command: ['true'] });
    const third = await submit(s.api, s.adminToken, 'one', { command: ['true'] });
    const w2 = await getJob(s.api, s.adminToken, second.id);
    const w3 = await getJob(s.api, s.adminToken, third.id);
    assert.equal(w2.position, 1);
    assert.equal(w3.position, 2);
    assert.match(w2.reason, /one/);
    writeFileSync(gate, '');
    for (const j of [first, second, third])
      assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
  });
});

describe('submission is refused', () => {
  const cases: [string, string, Record<string, unknown>, number, RegExp][] = [
    ['unknown target', 'default', { command: ['true'], target: 'mars' }, 422, /unknown target "mars"/],
    [
      'missing privilege',
      'default',
      { command: ['true'], target: 'gpu' },
      422,
      /requires privilege target.gpu/,
    ],
    [
      'request larger than the queue',
      'default',
      { command: ['true'], requests: { cpu: '100000' } },
      422,
      /more than cluster queue "default" can ever grant/,
    ],
    [
      'unknown resource type',
      'default',
      { command: ['true'], resources: ['licence'] },
      422,
      /unknown resource type "licence"/,
    ],
    ['no command', 'default', { name: 'x' }, 400, /needs a command/],
    ['command and script', 'default', { command: ['true'], script: 'true' }, 400, /either command or script/],
    ['bad quantity', 'default', { command: ['true'], requests: { cpu: 'lots' } }, 400, /not a quantity/],
    [
      'implicit jobs request',
      'default',
      { command: ['true'], requests: { jobs: 2 } },
      400,
      /implicitly requests jobs: 1/,
    ],
    ['unknown dependency', 'default', { command: ['true'], dependsOn: [999999] }, 422, /no job 999999/],
    [
      'unknown dependency of another kind',
      'default',
      { command: ['true'], dependsOnFailed: [999998] },
      422,
      /dependsOnFailed: no job 999998/,
    ],
    ['reserved variable', 'default', { command: ['true'], env: { BERTH_TOKEN: 'x' } }, 400, /set by berth/],
    ['unknown field', 'default', { command: ['true'], colour: 'red' }, 400, /unknown field "colour"/],
  ];
  for (const [what, project, body, status, message] of cases) {
    it(what, async () => {
      const r = await call<{ error: { message: string } }>(
        s.api,
        s.adminToken,
        'POST',
        `/projects/${project}/jobs`,
        body,
      );
      assert.equal(r.status, status, r.text);
      assert.match(r.body.error.message, message);
    });
  }

  it('when the project is inactive', async () => {
    await call(s.api, s.adminToken, 'POST', '/projects', {
      name: 'sleepy',
      clusterQueue: 'default',
      active: false,
    });
    const r = await call<{ error: { message: string } }>(
      s.api,
      s.adminToken,
      'POST',
      '/projects/sleepy/jobs',
      { command: ['true'] },
    );
    assert.equal(r.status, 409);
    assert.match(r.body.error.message, /inactive/);
  });

  it('leaves no worker behind after all of the above', async () => {
    await waitFor('every worker destroyed', async () => {
      const workers = (await call<{ state: string }[]>(s.api, s.adminToken, 'GET', '/workers')).body;
      return workers.every((w) => w.state === 'destroyed' || w.state === 'failed');
    });
    await waitFor(
      'every worker directory removed',
      () => readdirSync(join(s.dataDir, 'workers')).length === 0,
    );
  });
});
