/**
 * Limits per project and per token, over real HTTP: a project's `maxQueued` (or its queue's
 * `maxQueuedPerProject`) refuses submissions past it with 429 and Retry-After, also under a burst
 * of concurrent submissions; a token's rate limit answers a flood with 429s while another token,
 * and the agents of running jobs, are served; a job's token has a budget of its own
 * (`rateLimit.jobRequestsPerSecond`), which its agent's lifeline is outside of, and whose 429s its
 * agent waits out, losing no output.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { quietJob, submit, waitDone } from '../helpers/jobs.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

interface ErrorBody {
  error: { code: string; message: string };
}

describe("a project's maxQueued", () => {
  const server = useTestServer({}, async () => {
    const s = server();
    // Held: nothing is admitted, so every job submitted stays queued.
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', {
      name: 'held',
      quota: { jobs: 100 },
      stopPolicy: 'Hold',
    });
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', {
      name: 'capped',
      quota: { jobs: 100 },
      stopPolicy: 'Hold',
      maxQueuedPerProject: 2,
    });
  });
  const project = async (name: string, queue: string, maxQueued?: number | null) => {
    const s = server();
    const r = await call(s.api, s.adminToken, 'POST', '/projects', {
      name,
      clusterQueue: queue,
      ...(maxQueued === undefined ? {} : { maxQueued }),
    });
    assert.equal(r.status, 201, r.text);
  };
  const submitTo = (name: string) =>
    call<ErrorBody & { id: number }>(server().api, server().adminToken, 'POST', `/projects/${name}/jobs`, {
      command: ['true'],
    });

  it('refuses the submission past it with 429, Retry-After and a message naming it', async () => {
    await project('three', 'held', 3);
    for (let i = 0; i < 3; i++) assert.equal((await submitTo('three')).status, 201);
    const r = await submitTo('three');
    assert.equal(r.status, 429, r.text);
    assert.equal(r.body.error.code, 'too_many_requests');
    assert.match(r.body.error.message, /project "three" has 3 jobs queued, its maxQueued is 3/);
    assert.ok(Number(r.headers.get('retry-after')) > 0, 'Retry-After says when to try again');
  });

  it('lets a submission in again once a queued job has left the queue', async () => {
    await project('again', 'held', 1);
    const first = await submitTo('again');
    assert.equal((await submitTo('again')).status, 429);
    await call(server().api, server().adminToken, 'POST', `/jobs/${first.body.id}/cancel`);
    await waitDone(server().api, server().adminToken, first.body.id);
    assert.equal((await submitTo('again')).status, 201);
  });

  it("falls back to its queue's maxQueuedPerProject, and its own limit wins", async () => {
    await project('bydefault', 'capped');
    await project('own', 'capped', 4);
    for (let i = 0; i < 2; i++) assert.equal((await submitTo('bydefault')).status, 201);
    const r = await submitTo('bydefault');
    assert.equal(r.status, 429);
    assert.match(r.body.error.message, /cluster queue "capped"'s maxQueuedPerProject is 2/);
    for (let i = 0; i < 4; i++) assert.equal((await submitTo('own')).status, 201);
    assert.equal((await submitTo('own')).status, 429);
  });

  it('holds under a burst of concurrent submissions: exactly the limit gets in', async () => {
    await project('burst', 'held', 5);
    const answers = await Promise.all(Array.from({ length: 30 }, () => submitTo('burst')));
    const statuses = answers.map((a) => a.status).sort();
    assert.deepEqual(
      [statuses.filter((x) => x === 201).length, statuses.filter((x) => x === 429).length],
      [5, 25],
    );
  });

  it('only admins set it, and a bad value is refused', async () => {
    const s = server();
    await project('owned', 'held');
    await call(s.api, s.adminToken, 'POST', '/users', { name: 'olga' });
    const olga = (await call<{ token: string }>(s.api, s.adminToken, 'POST', '/users/olga/tokens')).body
      .token;
    await call(s.api, s.adminToken, 'PUT', '/projects/owned/members/olga', { role: 'owner' });
    const denied = await call<ErrorBody>(s.api, olga, 'PATCH', '/projects/owned', { maxQueued: 1000 });
    assert.equal(denied.status, 403, denied.text);
    assert.match(denied.body.error.message, /only admins can change a project's maxQueued/);
    const bad = await call<ErrorBody>(s.api, s.adminToken, 'PATCH', '/projects/owned', { maxQueued: 0 });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /maxQueued/);
    const set = await call<{ maxQueued: number }>(s.api, s.adminToken, 'PATCH', '/projects/owned', {
      maxQueued: 7,
    });
    assert.equal(set.body.maxQueued, 7);
  });
});

type Answer = Awaited<ReturnType<typeof call<ErrorBody>>>;

/**
 * Waves of requests (`wave`) until one is refused: a machine too busy to serve `limit` a second
 * would see none refused of a single wave, and rightly so. Whatever the pace, no more than `limit`
 * are served in any second the flood touched, and every answer is a 200 or a 429.
 */
async function floodUntilRefused(
  what: string,
  limit: number,
  wave: () => Promise<Answer[]>,
): Promise<{ served: number; refused: Answer[] }> {
  const answers: Answer[] = [];
  const t0 = Date.now();
  await waitFor(`a request of ${what} to be refused`, async () => {
    answers.push(...(await wave()));
    return answers.some((a) => a.status === 429);
  });
  const seconds = Math.ceil((Date.now() - t0) / 1000) + 1;
  const refused = answers.filter((a) => a.status === 429);
  const served = answers.filter((a) => a.status === 200).length;
  assert.ok(served <= limit * seconds, `${served} served in at most ${seconds} seconds`);
  assert.equal(served + refused.length, answers.length, 'every answer a 200 or a 429');
  return { served, refused };
}

describe("a token's rate limit", () => {
  const server = useTestServer({
    config: `${localFactoryConfig(4)}\nrateLimit: { requestsPerSecond: 20 }`,
    rateLimited: true,
  });

  it("answers one token's flood with 429s while another token and the jobs' agents are served", async () => {
    const s = server();
    await call(s.api, s.adminToken, 'POST', '/users', { name: 'flood' });
    const flood = (await call<{ token: string }>(s.api, s.adminToken, 'POST', '/users/flood/tokens')).body
      .token;
    await call(s.api, s.adminToken, 'PUT', '/projects/default/members/flood', { role: 'member' });
    // A job of the admin's runs throughout: its agent heartbeats and reports with a job token.
    const job = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '1'] });
    const { served, refused } = await floodUntilRefused('the flood', 20, () =>
      Promise.all(
        Array.from({ length: 60 }, () => call<ErrorBody>(s.api, flood, 'GET', '/projects/default/jobs')),
      ),
    );
    assert.ok(served > 0, 'the first requests of the second are served');
    assert.match(
      refused[0]!.body.error.message,
      /rate limit: more than 20 requests per second with this token/,
    );
    assert.ok(Number(refused[0]!.headers.get('retry-after')) >= 1);
    // Another token is not held back by it.
    assert.equal((await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}`)).status, 200);
    // waitDone's polls count against the admin's token too; its answer is the finished job's view
    // (a further GET could be refused within the same second).
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.exitCode, 0);
  });
});

describe("a job's token's rate limit", () => {
  const server = useTestServer({
    config: `${localFactoryConfig(4)}\nrateLimit: { jobRequestsPerSecond: 20 }`,
    rateLimited: true,
  });
  const scratch = scratchDir('berth-job-rate-');
  after(() => rmSync(scratch, { recursive: true, force: true }));

  it("answers a job's flood with 429s naming it; its agent's heartbeat, and another job, are served", async () => {
    const s = server();
    const [a, b] = [
      await quietJob(s.api, s.adminToken, 'default', scratch, 'a'),
      await quietJob(s.api, s.adminToken, 'default', scratch, 'b'),
    ];
    const [tokenA, tokenB] = [await a.token(), await b.token()];
    const { refused } = await floodUntilRefused("the job's flood", 20, async () => {
      const wave = Array.from({ length: 60 }, () => call<ErrorBody>(s.api, tokenA, 'GET', '/job/self'));
      // Sent while the wave is served: the agent's lifeline is outside the job's budget.
      const beat = await call(s.api, tokenA, 'POST', '/job/self/heartbeat');
      assert.equal(beat.status, 200, `a heartbeat amid the flood: ${beat.text}`);
      return Promise.all(wave);
    });
    assert.match(
      refused[0]!.body.error.message,
      /rate limit: more than 20 requests per second with this job's token \(the server's rateLimit\.jobRequestsPerSecond\)/,
    );
    // Another job's token, and the admin's, are not held back by it.
    assert.equal((await call(s.api, tokenB, 'GET', '/job/self')).status, 200);
    assert.equal((await call(s.api, s.adminToken, 'GET', `/jobs/${a.id}`)).status, 200);
    a.release();
    b.release();
    for (const j of [a, b]) assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
  });

  it('keeps all the output of a job that floods its own token: its agent waits out the 429s', async () => {
    const s = server();
    // 150 calls at once from one curl (-Z: a process each was too slow to start on a loaded
    // machine to pass 20 a second; 60 at once once met no 429 in a loaded rehearsal of CI, on
    // PostgreSQL), each printing its status: the uploads of that output compete with them.
    const flood = `urls=; for i in $(seq 1 150); do urls="$urls -o /dev/null $BERTH_URL/api/v1/job/self"; done; curl -s -Z --parallel-max 150 -w '%{http_code}\\n' -H "Authorization: Bearer $BERTH_TOKEN" $urls 2>/dev/null`;
    const job = await submit(s.api, s.adminToken, 'default', {
      script: `${flood}; ${flood}; echo after the flood`,
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded');
    const lines = (await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`)).text.trim().split('\n');
    assert.equal(lines.length, 301, lines.join(' '));
    assert.equal(lines.at(-1), 'after the flood');
    assert.ok(lines.includes('429'), 'some of its calls were refused');
    assert.deepEqual(new Set(lines.slice(0, -1)), new Set(['200', '429']));
  });
});
