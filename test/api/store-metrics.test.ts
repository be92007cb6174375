/**
 * The store's figures, the streams held open, the retention sweep's progress and the per-project
 * series (issue #43), after real actions: submissions go through group commits whose batches are
 * counted with their units and timed, and reads are timed; an event stream and a followed log
 * count while they are open; the sweep at start marks each kind kept for a while as swept; the
 * per-project series exist with `metrics.perProject` only, and then count each project's jobs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { scrape } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { assertStatus, useServer, type ApiServer } from './fixtures.js';

const config = (perProject: boolean) =>
  [
    'factories:',
    '  sim: { kind: simulated }',
    'targets:',
    '  sim: { factory: sim }',
    'retention: { jobs: 30d, audit: forever }',
    ...(perProject ? ['metrics: { perProject: true }'] : []),
  ].join('\n');

async function queueAndProjects(c: ApiServer, ...projects: string[]): Promise<void> {
  assertStatus(await c.api(c.admin, 'POST', '/cluster-queues', { name: 'q', quota: { cpu: '1' } }), 201);
  for (const name of projects)
    assertStatus(await c.api(c.admin, 'POST', '/projects', { name, clusterQueue: 'q' }), 201);
}

void describe('store, stream and retention metrics', () => {
  const ctx = useServer((c) => queueAndProjects(c, 'p'), { config: config(false) });
  const metrics = () => scrape(ctx.server.api, ctx.admin);

  void test("counts each group commit's units and times its batch and the reads", async () => {
    const before = await metrics();
    const jobs = await Promise.all(
      [1, 2, 3, 4, 5].map(() => submit(ctx.server.api, ctx.admin, 'p', { command: ['sleep', '0'] })),
    );
    for (const j of jobs) assert.equal((await waitDone(ctx.server.api, ctx.admin, j.id)).state, 'succeeded');
    const after = await metrics();
    const moved = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    const batches = moved('berth_store_batch_units_count');
    // Each submission is a unit, and so is each job's every transition with its event.
    assert.ok(batches >= 1, `${batches} batches`);
    assert.ok(moved('berth_store_batch_units_sum') >= jobs.length * 2, 'units written');
    assert.ok(moved('berth_store_batch_units_sum') >= batches, 'a batch carries at least one unit');
    assert.equal(moved('berth_store_write_seconds_count'), batches, 'each batch timed');
    assert.ok(moved('berth_store_write_seconds_sum') > 0);
    // Every GET /jobs/{id} of waitDone read the job's row.
    assert.ok(moved('berth_store_read_seconds_count') >= jobs.length, 'reads timed');
    assert.ok(moved('berth_store_read_seconds_sum') > 0);
  });

  void test('counts an event stream and a followed log while they are open', async () => {
    const open = async (kind: string, n: number) =>
      waitFor(
        `${n} ${kind} streams open`,
        async () => (await metrics()).get(`berth_open_streams{kind="${kind}"}`) === n,
      );
    await open('events', 0);
    await open('logs', 0);
    const headers = { authorization: `Bearer ${ctx.admin}` };
    const events = new AbortController();
    const stream = await fetch(`${ctx.server.api}/stream`, { headers, signal: events.signal });
    assert.equal(stream.status, 200);
    await open('events', 1);
    const job = await submit(ctx.server.api, ctx.admin, 'p', { command: ['sleep', '300'] });
    await waitFor(
      'the job to run',
      async () => (await getJob(ctx.server.api, ctx.admin, job.id)).state === 'running',
    );
    const logs = new AbortController();
    const log = await fetch(`${ctx.server.api}/jobs/${job.id}/logs?follow=true`, {
      headers,
      signal: logs.signal,
    });
    assert.equal(log.status, 200);
    await open('logs', 1);
    events.abort();
    await open('events', 0);
    // The follow ends with its job, as when its client goes.
    assertStatus(await ctx.api(ctx.admin, 'POST', `/jobs/${job.id}/cancel`), 200);
    await open('logs', 0);
    logs.abort();
  });

  void test('marks each kind of history kept for a while as swept, once the sweep at start is through', async () => {
    const m = await waitFor('the sweep at start', async () => {
      const m = await metrics();
      return (m.get('berth_retention_last_sweep_timestamp_seconds{kind="jobs"}') ?? 0) > 0 ? m : undefined;
    });
    const jobs = m.get('berth_retention_last_sweep_timestamp_seconds{kind="jobs"}')!;
    assert.ok(jobs <= Date.now() / 1000 && jobs > Date.now() / 1000 - 600, `swept at ${jobs}`);
    assert.ok((m.get('berth_retention_last_sweep_timestamp_seconds{kind="ledger"}') ?? 0) > 0);
    // Audit rows are kept forever: nothing sweeps them, and no series says when.
    assert.equal(m.get('berth_retention_last_sweep_timestamp_seconds{kind="audit"}'), undefined);
  });

  void test('keeps no per-project series without metrics.perProject', async () => {
    const job = await submit(ctx.server.api, ctx.admin, 'p', { command: ['sleep', '0'] });
    await waitDone(ctx.server.api, ctx.admin, job.id);
    const m = await metrics();
    assert.ok((m.get('berth_admission_wait_seconds_count{queue="q"}') ?? 0) > 0);
    assert.deepEqual(
      [...m.keys()].filter((k) => k.startsWith('berth_project_') || k.includes('project="')),
      [],
    );
  });
});

void describe('per-project metrics (metrics.perProject)', () => {
  const ctx = useServer((c) => queueAndProjects(c, 'alpha', 'beta'), { config: config(true) });
  const metrics = () => scrape(ctx.server.api, ctx.admin);

  void test("counts each project's jobs and its admission waits", async () => {
    const done = await submit(ctx.server.api, ctx.admin, 'beta', { command: ['sleep', '0'] });
    await waitDone(ctx.server.api, ctx.admin, done.id);
    // The queue's one cpu, taken: the next job waits.
    const holder = await submit(ctx.server.api, ctx.admin, 'alpha', {
      command: ['sleep', '300'],
      requests: { cpu: '1' },
    });
    await waitFor(
      'the holder to run',
      async () => (await getJob(ctx.server.api, ctx.admin, holder.id)).state === 'running',
    );
    const waiting = await submit(ctx.server.api, ctx.admin, 'alpha', {
      command: ['sleep', '0'],
      requests: { cpu: '1' },
    });
    const alpha = (m: Map<string, number>) => ({
      pending: m.get('berth_project_pending_jobs{project="alpha"}'),
      admitted: m.get('berth_project_admitted_jobs{project="alpha"}'),
      running: m.get('berth_project_running_jobs{project="alpha"}'),
      admissions: m.get('berth_project_admission_wait_seconds_count{project="alpha"}'),
    });
    const m = await waitFor('alpha counted', async () => {
      const m = await metrics();
      return alpha(m).pending === 1 ? m : undefined;
    });
    assert.deepEqual(alpha(m), { pending: 1, admitted: 1, running: 1, admissions: 1 });
    // Beta has nothing unfinished: its series stay, at 0, beside its admission's wait.
    assert.equal(m.get('berth_project_admission_wait_seconds_count{project="beta"}'), 1);
    assert.equal(m.get('berth_project_pending_jobs{project="beta"}'), 0);
    assert.equal(m.get('berth_project_running_jobs{project="beta"}'), 0);
    for (const id of [waiting.id, holder.id]) {
      assertStatus(await ctx.api(ctx.admin, 'POST', `/jobs/${id}/cancel`), 200);
      await waitDone(ctx.server.api, ctx.admin, id);
    }
  });
});
