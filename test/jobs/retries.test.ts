/**
 * Retries end to end on the local factory, over real HTTP with real processes: a failed job runs
 * again while its budget lasts, after its backoff, holding nothing meanwhile; the job's own
 * failures and the infrastructure's draw on separate budgets; every attempt is kept with its
 * reason and exit code, and its own part of the log.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';

import { after, before, describe, it } from 'node:test';
import { events, getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { agentHost } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { countedRuns, runsOf, scratchDir } from '../helpers/scratch.js';

interface RetryView extends JobView {
  attempts: number;
  retries: number;
  infraRetries: number;
  retried: number;
  infraRetried: number;
  retryAt: string | null;
}

interface AttemptView {
  attempt: number;
  outcome: string;
  reason: string;
  exitCode: number | null;
  charged: string | null;
  startedAt: string | null;
  endedAt: string | null;
}

interface ErrorBody {
  error: { code: string; message: string };
}

let s: TestServer;
let scratch: string;
let hostPid: number | undefined;

before(async () => {
  scratch = scratchDir('berth-retries-');
  s = await startTestServer({
    config: [
      'graceSeconds: 1',
      'heartbeatSeconds: 2',
      'factories:',
      '  local: { kind: local, capacity: 1 }',
      'targets:',
      '  local: { factory: local }',
    ].join('\n'),
  });
});
after(async () => {
  if (hostPid) process.kill(hostPid, 'SIGCONT');
  await s.close();
  rmSync(scratch, { recursive: true, force: true });
});

const view = async (id: number): Promise<RetryView> => (await getJob(s.api, s.adminToken, id)) as RetryView;
const attempts = async (id: number): Promise<AttemptView[]> =>
  (await call<AttemptView[]>(s.api, s.adminToken, 'GET', `/jobs/${id}/attempts`)).body;
const log = async (id: number, attempt?: number): Promise<string> =>
  (await call(s.api, s.adminToken, 'GET', `/jobs/${id}/logs${attempt ? `?attempt=${attempt}` : ''}`)).text;

/** A script that counts its runs in `name` and prints which run it is before doing `then`. */
const counted = (name: string, then: string): string => countedRuns(scratch, name, `echo "run $n"; ${then}`);
const runs = (name: string): number => runsOf(scratch, name);

describe('retries', () => {
  it('runs a job that failed again, and keeps each attempt with its reason, exit code and output', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('flaky', '[ $n -ge 3 ] || exit 7'),
      retries: 3,
      retryBackoffSeconds: 0.1,
    });
    const done = (await waitDone(s.api, s.adminToken, job.id)) as RetryView;
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(runs('flaky'), 3);
    assert.equal(done.attempts, 2);
    assert.equal(done.retried, 2);
    assert.equal(done.infraRetried, 0);
    assert.equal(done.retryAt, null);

    const list = await attempts(job.id);
    assert.deepEqual(
      list.map((a) => [a.attempt, a.outcome, a.exitCode, a.charged]),
      [
        [1, 'retried', 7, 'job'],
        [2, 'retried', 7, 'job'],
        [3, 'succeeded', 0, null],
      ],
    );
    assert.equal(list[0]!.reason, 'exited with code 7');
    assert.ok(list.every((a) => a.endedAt !== null));

    assert.equal(await log(job.id, 1), 'run 1\n');
    assert.equal(await log(job.id, 2), 'run 2\n');
    assert.equal(await log(job.id, 3), 'run 3\n');
    assert.equal(await log(job.id), 'run 1\nrun 2\nrun 3\n');
    const bad = await call<ErrorBody>(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs?attempt=4`);
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /had attempts 1 to 3/);

    const timeline = await events(s.api, s.adminToken, job.id);
    const retrying = timeline.filter((e) => e.type === 'retrying');
    assert.equal(retrying.length, 2);
    assert.match(
      retrying[0]!.message,
      /^attempt 1 failed: exited with code 7; retry 1 of 3 for the job's own failures in \d/,
    );
    assert.equal(timeline.filter((e) => e.type === 'started').length, 3);
  });

  it('fails once the budget is spent, with the last exit code', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('always', 'exit 3'),
      retries: 2,
      retryBackoffSeconds: 0,
    });
    const done = (await waitDone(s.api, s.adminToken, job.id)) as RetryView;
    assert.equal(done.state, 'failed');
    assert.equal(done.exitCode, 3);
    assert.equal(done.reason, 'exited with code 3 (attempt 3)');
    assert.equal(runs('always'), 3);
    assert.equal(done.retried, 2);
  });

  it("does not charge the job's own failure to the infrastructure's budget", async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('own', 'exit 5'),
      infraRetries: 3,
      retryBackoffSeconds: 0,
    });
    const done = (await waitDone(s.api, s.adminToken, job.id)) as RetryView;
    assert.equal(done.state, 'failed');
    assert.equal(done.reason, 'exited with code 5');
    assert.equal(runs('own'), 1);
  });

  it("does not let a running job's code move its own failure to the infrastructure's budget", async () => {
    // What only an agent whose node could not pull the job's image may say, before the start.
    const finish = [
      'curl -s -o /dev/null -w "%{http_code}" -X POST -H "Authorization: Bearer $BERTH_TOKEN"',
      `-H "content-type: application/json" -d '{"outcome":"start-failed","exitCode":null,"signal":null,"infrastructure":true}'`,
      '"$BERTH_URL/api/v1/job/self/finish"; sleep 30',
    ].join(' ');
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('claims', finish),
      infraRetries: 3,
      retryBackoffSeconds: 0,
    });
    const done = (await waitDone(s.api, s.adminToken, job.id)) as RetryView;
    assert.equal(done.state, 'failed', done.reason);
    assert.equal(done.infraRetried, 0);
    const [first] = await attempts(job.id);
    assert.equal(first!.charged, 'job');
    assert.equal(runs('claims'), 1);
  });

  it('holds nothing while it waits out its backoff, and a cancel then ends it without another run', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('waits', 'exit 1'),
      retries: 1,
      retryBackoffSeconds: 600,
    });
    // Waiting for its retry, its worker gone (destroyed, or on its way: the destroy is recorded
    // just after the attempt's end), and estimated (a forecast made since it began to wait).
    const waiting = await waitFor('the job to wait for its retry, its worker given back', async () => {
      const j = (await view(job.id)) as RetryView & { estimatedStartAt: string | null };
      return j.retryAt !== null && /^destroy/.test(j.worker?.state ?? '') && j.estimatedStartAt !== null
        ? j
        : undefined;
    });
    assert.equal(waiting.state, 'queued');
    assert.equal(waiting.position, null);
    // Its queue has room: it is expected to start the moment its backoff ends.
    assert.equal(waiting.estimatedStartAt, waiting.retryAt);
    // Equal jitter: between half the backoff and all of it.
    const wait = Date.parse(waiting.retryAt!) - Date.now();
    assert.ok(wait > 290_000 && wait <= 600_000, `retry in ${wait} ms`);
    assert.match(
      waiting.reason,
      /^attempt 1 failed: exited with code 1; retry 1 of 1 for the job's own failures in \d+m/,
    );

    // The factory's one worker is free: another job runs meanwhile.
    const other = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    assert.equal((await waitDone(s.api, s.adminToken, other.id)).state, 'succeeded');

    const cancelled = await call(s.api, s.adminToken, 'POST', `/jobs/${job.id}/cancel`);
    assert.equal(cancelled.status, 200);
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'cancelled');
    assert.equal(runs('waits'), 1);
  });

  it("retries a job whose worker was lost on the infrastructure's budget", async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      script: counted('lost', '[ $n -ge 2 ] || sleep 300'),
      infraRetries: 1,
      retryBackoffSeconds: 0,
    });
    await waitFor('the job to run', async () => (await view(job.id)).state === 'running');
    hostPid = agentHost();
    process.kill(hostPid, 'SIGSTOP');
    await waitFor(
      'the lost worker to be noticed',
      async () => (await view(job.id)).infraRetried === 1,
      30_000,
    );
    process.kill(hostPid, 'SIGCONT');
    hostPid = undefined;
    const done = (await waitDone(s.api, s.adminToken, job.id)) as RetryView;
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(done.retried, 0);
    const [first] = await attempts(job.id);
    assert.equal(first!.charged, 'infrastructure');
    assert.match(first!.reason, /^worker lost: no heartbeat for \d+s/);
    assert.equal(runs('lost'), 2);
  });

  it('refuses budgets out of range with 400', async () => {
    for (const body of [
      { retries: -1 },
      { retries: 101 },
      { infraRetries: 1.5 },
      { retryBackoffSeconds: 4000 },
    ]) {
      const r = await call<ErrorBody>(s.api, s.adminToken, 'POST', '/projects/default/jobs', {
        command: ['true'],
        ...body,
      });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error.message, new RegExp(Object.keys(body)[0]!));
    }
  });
});
