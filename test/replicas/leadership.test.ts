/**
 * Leadership between real replica processes: a leader frozen past its lease (SIGSTOP) is replaced
 * and, thawed (SIGCONT), has its writes refused and steps down; a leader stopped with SIGTERM
 * hands over within a second; and a follower serves the API — reads, submissions, cancels, the
 * agent-facing routes through the leader — while the leader runs the jobs.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, afterEach, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { Stream } from '../helpers/sse.js';
import { waitFor } from '../helpers/wait.js';
import { health, LEASE_SECONDS, RENEW_SECONDS, replicaConfig } from './support.js';
import { scratchDir } from '../helpers/scratch.js';

describe('replicas', { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' }, () => {
  const dir = scratchDir('berth-replicas-');
  const config = join(dir, 'berth.yaml');
  writeFileSync(config, replicaConfig());
  let running: ServerProcess[] = [];
  let db: TestDatabase | undefined;

  /** A leader and a follower on a database of their own. */
  async function pair(name: string): Promise<[ServerProcess, ServerProcess]> {
    db = await createTestDatabase();
    const leader = await spawnServer(join(dir, `${name}-1`), config, { database: db.url });
    const follower = await spawnServer(join(dir, `${name}-2`), config, {
      database: db.url,
      token: leader.token,
    });
    running = [leader, follower];
    assert.equal((await health(leader)).role, 'leader');
    assert.equal((await health(follower)).role, 'follower');
    return [leader, follower];
  }

  afterEach(async () => {
    for (const r of running) {
      if (r.child.signalCode === 'SIGSTOP') r.child.kill('SIGCONT');
      if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
    }
    running = [];
    await db?.drop();
    db = undefined;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a follower serves reads, submissions and cancels; the leader runs the jobs', async () => {
    const [leader, follower] = await pair('serve');
    const h = await health(follower);
    assert.equal(h.leader, leader.url, 'the follower knows where the leader is');
    // The follower's live stream hears of what the leader does.
    const stream = await Stream.open(follower.api, follower.token);
    try {
      await stream.next('hello', 'the stream to open');
      // A submission on the follower reaches the leader at once.
      const gate = join(dir, 'serve-gate');
      const job = await submit(follower.api, follower.token, 'default', {
        command: ['sh', '-c', `echo from $BERTH_URL; while [ ! -e ${gate} ]; do sleep 0.05; done; echo done`],
      });
      await stream.next<{ id: number; state: string }>(
        'job',
        "the job running, on the follower's stream",
        (n) => n.id === job.id && n.state === 'running',
      );
      // Its log followed through the follower, live, to its end.
      const follow = fetch(`${follower.api}/jobs/${job.id}/logs?follow=true`, {
        headers: { authorization: `Bearer ${follower.token}` },
      }).then((r) => r.text());
      writeFileSync(gate, '');
      assert.equal(await follow, `from ${leader.url}\ndone\n`, 'followed to the end through the follower');
      await stream.next<{ id: number; state: string }>(
        'job',
        "the job succeeded, on the follower's stream",
        (n) => n.id === job.id && n.state === 'succeeded',
      );
    } finally {
      stream.close();
    }
    const job = (await call<{ id: number }[]>(follower.api, follower.token, 'GET', '/projects/default/jobs'))
      .body[0]!;
    const done = await waitDone(follower.api, follower.token, job.id);
    assert.equal(done.state, 'succeeded');
    const log = (await call(follower.api, follower.token, 'GET', `/jobs/${job.id}/logs`)).text;
    assert.match(log, new RegExp(`^from ${leader.url}\n`), 'it ran on a worker of the leader');
    // A queue made on the follower is the leader's at once; a job waiting in it shows its place.
    assert.equal(
      (
        await call(follower.api, follower.token, 'POST', '/cluster-queues', {
          name: 'one',
          quota: { jobs: 1 },
        })
      ).status,
      201,
    );
    assert.equal(
      (await call(follower.api, follower.token, 'POST', '/projects', { name: 'p', clusterQueue: 'one' }))
        .status,
      201,
    );
    const long = await submit(follower.api, follower.token, 'p', { command: ['sleep', '300'] });
    const waiting = await submit(follower.api, follower.token, 'p', { command: ['true'] });
    await waitFor(
      'the first to run',
      async () => (await getJob(follower.api, follower.token, long.id)).state === 'running',
    );
    const view = await getJob(follower.api, follower.token, waiting.id);
    assert.equal(view.position, 1, 'the follower answers with the leader’s live position');
    const pending = await call<{ id: number }[]>(
      follower.api,
      follower.token,
      'GET',
      '/cluster-queues/one/pending',
    );
    assert.deepEqual(
      pending.body.map((e) => e.id),
      [waiting.id],
    );
    const usage = await call<{ usage: Record<string, string> }>(
      follower.api,
      follower.token,
      'GET',
      '/cluster-queues/one',
    );
    await waitFor('the leader’s figures on the follower', async () => {
      const q = await call<{ usage: Record<string, unknown> }>(
        follower.api,
        follower.token,
        'GET',
        '/cluster-queues/one',
      );
      return String(q.body.usage.jobs) === '1';
    });
    assert.equal(usage.status, 200);
    // Cancelled through the follower.
    assert.equal((await call(follower.api, follower.token, 'POST', `/jobs/${long.id}/cancel`)).status, 200);
    assert.equal((await waitDone(follower.api, follower.token, long.id)).state, 'cancelled');
    assert.equal((await waitDone(follower.api, follower.token, waiting.id)).state, 'succeeded');
  });

  it('a project deleted with its jobs cancelled, through the follower or the leader: the leader stops them', async () => {
    const [leader, follower] = await pair('delete');
    for (const r of [leader, follower])
      assert.equal(
        (
          await call(r.api, r.token, 'POST', '/projects', {
            name: `gone-${r === leader ? 1 : 2}`,
            clusterQueue: 'default',
          })
        ).status,
        201,
      );
    // Made on the leader, deleted through the follower; and the other way round.
    for (const [made, via] of [
      [leader, follower],
      [follower, leader],
    ] as const) {
      const project = `gone-${made === leader ? 1 : 2}`;
      const job = await submit(made.api, made.token, project, { command: ['sleep', '300'] });
      await waitFor(
        `job ${job.id} to run`,
        async () => (await getJob(leader.api, leader.token, job.id)).state === 'running',
      );
      const r = await call(via.api, via.token, 'DELETE', `/projects/${project}?cancelJobs=true`);
      assert.equal(r.status, 204, r.text);
      const done = await waitDone(leader.api, leader.token, job.id);
      assert.equal(
        done.state,
        'cancelled',
        `${project}, deleted through the ${via === follower ? 'follower' : 'leader'}: ${done.reason}`,
      );
    }
  });

  it(`a leader frozen past its lease is replaced; thawed, it steps down without writing`, async () => {
    const [leader, follower] = await pair('freeze');
    const term = (await health(leader)).term;
    const job = await submit(leader.api, leader.token, 'default', { command: ['sleep', '300'] });
    await waitFor(
      'the job to run',
      async () => (await getJob(leader.api, leader.token, job.id)).state === 'running',
    );
    leader.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const h = await waitFor(
      'the follower to lead',
      async () => {
        const f = await health(follower);
        return f.role === 'leader' ? f : undefined;
      },
      30_000,
    );
    const took = (Date.now() - frozenAt) / 1000;
    assert.equal(h.term, term + 1);
    assert.ok(took <= LEASE_SECONDS + RENEW_SECONDS + 2, `took over after ${took.toFixed(1)} s`);
    // The new leader found the job running on a worker it cannot reach: it failed it.
    const failed = await waitDone(follower.api, follower.token, job.id);
    assert.equal(failed.state, 'failed');
    assert.match(failed.reason, /server restarted/);
    const timeline = (await events(follower.api, follower.token, job.id)).map((e) => e.type);

    leader.child.kill('SIGCONT');
    // It follows, and (looking at the lease once it has stopped) knows who leads now.
    await waitFor(
      'the old leader to follow the new one',
      async () => {
        const h = await health(leader);
        return h.role === 'follower' && h.leader === follower.url;
      },
      10_000,
    );
    // Which of the three fences it meets first depends on where the freeze caught it: renewing the
    // lease, fenced by the term on its next write, or (frozen inside a transaction) its
    // connection ended by PostgreSQL's idle_in_transaction_session_timeout. (Its health says it
    // follows a moment before its log says why: waited for, not read at once.)
    const why = new RegExp(
      `no longer leading \\(term ${term}\\): (a write was refused|could not renew|a write to the store failed)`,
    );
    await waitFor('the old leader to say why it stepped down', () => why.test(leader.output()), 10_000);
    // Whatever it still believed (a job running on its worker), nothing of it was written.
    await waitFor(
      'its worker to be gone',
      async () => (await getJob(follower.api, follower.token, job.id)).cleanedUp,
    );
    assert.deepEqual(
      (await events(follower.api, follower.token, job.id)).map((e) => e.type),
      timeline,
    );
    // And the installation goes on: a job submitted through the old leader runs on the new one.
    const after = await submit(leader.api, leader.token, 'default', { command: ['true'] });
    assert.equal((await waitDone(leader.api, leader.token, after.id)).state, 'succeeded');
  });

  it('a leader stopped with SIGTERM hands over at once, not once its lease has run out', async () => {
    const [leader, follower] = await pair('term');
    const term = (await health(leader)).term;
    const exited = new Promise((resolve) => leader.child.once('exit', resolve));
    const stoppedAt = Date.now();
    leader.child.kill('SIGTERM');
    const h = await waitFor(
      'the follower to lead',
      async () => {
        const f = await health(follower);
        return f.role === 'leader' ? f : undefined;
      },
      10_000,
    );
    const took = Date.now() - stoppedAt;
    await exited;
    assert.equal(h.term, term + 1);
    // Its lease, renewed every RENEW_SECONDS, would have lasted at least LEASE_SECONDS less that
    // from the kill: sooner, it was given up. (A quiet machine: well under a second, printed.)
    assert.ok(took < (LEASE_SECONDS - RENEW_SECONDS) * 1000, `handed over after ${took} ms`);
    console.log(`# SIGTERM → new leader in ${took} ms`);
  });
});
