/**
 * Limits per project and per token, over real HTTP: a project's `maxQueued` (or its queue's
 * `maxQueuedPerProject`) refuses submissions past it with 429 and Retry-After, also under a burst
 * of concurrent submissions; a token's rate limit answers a flood with 429s while another token,
 * and the agents of running jobs, are served.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { submit, waitDone } from '../helpers/jobs.js';
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
    // Waves of 60 at once until one is refused: a machine too busy to serve 20 a second would
    // see none refused of a single wave, and rightly so. Whatever the pace, no more than 20 are
    // served in any second the flood touched.
    const answers: Awaited<ReturnType<typeof call<ErrorBody>>>[] = [];
    const t0 = Date.now();
    await waitFor('a request of the flood to be refused', async () => {
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 60 }, () => call<ErrorBody>(s.api, flood, 'GET', '/projects/default/jobs')),
        )),
      );
      return answers.some((a) => a.status === 429);
    });
    const seconds = Math.ceil((Date.now() - t0) / 1000) + 1;
    const refused = answers.filter((a) => a.status === 429);
    const served = answers.filter((a) => a.status === 200).length;
    assert.ok(served <= 20 * seconds, `${served} served in at most ${seconds} seconds`);
    assert.equal(served + refused.length, answers.length, 'every answer a 200 or a 429');
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
