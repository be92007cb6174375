/**
 * GET /metrics: Prometheus text for admins only, with counters that move as jobs run, gauges
 * read from the live scheduler, and a registry of each server's own.
 */
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { describe, test } from 'node:test';
import { submit, waitDone } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';
import { assertError, assertStatus, createUser, useServer, withDb, type ApiServer } from './fixtures.js';

const SIMULATED = ['factories:', '  sim: { kind: simulated }', 'targets:', '  sim: { factory: sim }'].join(
  '\n',
);

/** The value of one sample, e.g. `berth_jobs_finished_total{state="succeeded"}`; undefined if absent. */
function sample(text: string, name: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    if (line.slice(0, cut) === name) return Number(line.slice(cut + 1));
  }
  return undefined;
}

async function scrape(ctx: ApiServer): Promise<string> {
  const res = await ctx.api<string>(ctx.admin, 'GET', '/metrics');
  assertStatus(res, 200);
  return res.text;
}

void describe('GET /metrics', () => {
  const ctx = useServer(undefined, { config: SIMULATED });

  void test('needs a token, and an admin’s', async () => {
    assertError(await ctx.api(undefined, 'GET', '/metrics'), 401, 'unauthorized');
    const alice = await createUser(ctx.api, ctx.admin, 'alice');
    assertError(await ctx.api(alice.token, 'GET', '/metrics'), 403, 'forbidden', /only admins/);
    assertStatus(await ctx.api(ctx.admin, 'GET', '/metrics'), 200);
  });

  void test('is Prometheus text with the scheduler, job, queue and process metrics', async () => {
    const res = await fetch(`${ctx.server.api}/metrics`, {
      headers: { authorization: `Bearer ${ctx.admin}` },
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    for (const name of [
      'berth_scheduler_pass_seconds',
      'berth_scheduler_decisions_total',
      'berth_jobs_submitted_total',
      'berth_jobs_finished_total',
      'berth_queue_pending_jobs',
      'berth_queue_admitted_jobs',
      'berth_controller_tick_seconds',
      'process_cpu_user_seconds_total',
    ])
      assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
    assert.match(text, /^# TYPE berth_scheduler_pass_seconds summary$/m);
    assert.equal(sample(text, 'berth_queue_pending_jobs{queue="default"}'), 0);
  });

  void test('counts submissions, decisions, finished jobs and scheduler passes as a job runs', async () => {
    const before = await scrape(ctx);
    const job = await submit(ctx.server.api, ctx.admin, 'default', { command: ['sleep', '0'] });
    assert.equal((await waitDone(ctx.server.api, ctx.admin, job.id)).state, 'succeeded');
    const after = await scrape(ctx);
    const moved = (name: string) => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
    assert.equal(moved('berth_jobs_submitted_total'), 1);
    assert.equal(moved('berth_scheduler_decisions_total{kind="admit"}'), 1);
    assert.equal(moved('berth_jobs_finished_total{state="succeeded"}'), 1);
    assert.equal(moved('berth_jobs_finished_total{state="failed"}'), 0);
    assert.ok(moved('berth_scheduler_pass_seconds_count') >= 1);
    assert.ok(moved('berth_controller_tick_seconds_count') >= 1);
    assert.ok((sample(after, 'berth_scheduler_pass_seconds{quantile="0.99"}') ?? NaN) >= 0);
    // The same figures the store has.
    const finished = await withDb(ctx.server, (db) =>
      db
        .selectFrom('jobs')
        .select(sql<number>`count(*)`.as('n'))
        .where('state', '=', 'succeeded')
        .executeTakeFirstOrThrow(),
    );
    assert.equal(sample(after, 'berth_jobs_finished_total{state="succeeded"}'), Number(finished.n));
  });

  void test('shows what a queue holds and waits for, read live', async () => {
    const blocker = await submit(ctx.server.api, ctx.admin, 'default', {
      command: ['sleep', '3600'],
      requests: { cpu: '1' },
    });
    const text = await waitFor('the job to be admitted and given a worker', async () => {
      const t = await scrape(ctx);
      const running = sample(t, 'berth_factory_workers_in_use{factory="sim"}') === 1;
      return sample(t, 'berth_queue_admitted_jobs{queue="default"}') === 1 && running ? t : undefined;
    });
    assert.equal(sample(text, 'berth_queue_usage{queue="default",resource="cpu"}'), 1);
    assertStatus(await ctx.api(ctx.admin, 'POST', `/jobs/${blocker.id}/cancel`), 200);
    await waitDone(ctx.server.api, ctx.admin, blocker.id);
    assert.equal(sample(await scrape(ctx), 'berth_queue_admitted_jobs{queue="default"}'), 0);
  });
});

void describe('metrics of another server in the same process', () => {
  const other = useServer();

  void test('start from zero: each server has a registry of its own', async () => {
    const text = await scrape(other);
    assert.equal(sample(text, 'berth_jobs_submitted_total'), 0);
    assert.equal(sample(text, 'berth_jobs_finished_total{state="succeeded"}'), 0);
  });
});
