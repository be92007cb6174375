/**
 * The gauges read from the controller's model and the scheduler's backfill figures (issue #43),
 * after real actions: a job in a queue on hold counts as held, and so does one waiting for its
 * dependency; one that does not fit the quota left as inadmissible; a Backfill queue's reservation
 * and the job it lets through ahead of it; how far an estimate shown to a user landed from the
 * admission; a running job's worker, resource instance and device by state.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { describe, test } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { scrape } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { assertStatus, useServer } from './fixtures.js';

const CONFIG = [
  'graceSeconds: 1',
  'factories:',
  '  sim: { kind: simulated }',
  '  local: { kind: local, capacity: 2, devices: { gpu: { count: 2 } } }',
  'targets:',
  '  sim: { factory: sim }',
  '  local: { factory: local }',
  'resources:',
  '  licence: { kind: semaphore, capacity: 2 }',
].join('\n');

const QUEUES = [
  { name: 'on-hold', quota: { cpu: '4' }, stopPolicy: 'Hold' },
  { name: 'one', quota: { cpu: '1' } },
  { name: 'bf', quota: { cpu: '2' }, queueingStrategy: 'Backfill' },
  { name: 'gpus', quota: { cpu: '4', gpu: '2' } },
];

void describe('model and scheduler metrics', () => {
  const ctx = useServer(
    async (c) => {
      for (const q of QUEUES) {
        assertStatus(await c.api(c.admin, 'POST', '/cluster-queues', q), 201);
        assertStatus(await c.api(c.admin, 'POST', '/projects', { name: q.name, clusterQueue: q.name }), 201);
      }
    },
    { config: CONFIG },
  );
  const metrics = () => scrape(ctx.server.api, ctx.admin);
  /** Waits until `read` of a scrape is `expected`; fails saying what it last was. */
  const settle = async <T>(what: string, read: (m: Map<string, number>) => T, expected: T) => {
    let last: T | undefined;
    await waitFor(
      what,
      async () => isDeepStrictEqual((last = read(await metrics())), expected),
      30_000,
    ).catch(() => assert.deepEqual(last, expected, what));
  };
  const statuses = (queue: string) => (m: Map<string, number>) =>
    Object.fromEntries(
      ['active', 'inadmissible', 'held'].map((s) => [
        s,
        m.get(`berth_pending_jobs{queue="${queue}",status="${s}"}`),
      ]),
    );
  const job = (project: string, body: Record<string, unknown>) =>
    submit(ctx.server.api, ctx.admin, project, body);
  const cancel = async (...ids: number[]) => {
    for (const id of ids) await ctx.api(ctx.admin, 'POST', `/jobs/${id}/cancel`);
  };
  const running = (id: number) =>
    waitFor(
      `job ${id} to run`,
      async () => (await getJob(ctx.server.api, ctx.admin, id)).state === 'running',
    );

  void test('counts queued jobs by status: held (a queue on hold, a dependency), inadmissible', async () => {
    const held = await job('on-hold', { command: ['sleep', '1'], requests: { cpu: '1' } });
    const holder = await job('one', { command: ['sleep', '300'], requests: { cpu: '1' } });
    await running(holder.id);
    // The one cpu is taken: it cannot be admitted before the holder ends.
    const short = await job('one', { command: ['sleep', '1'], requests: { cpu: '1' } });
    // Waits outside the scheduler for its dependency.
    const after = await job('one', { command: ['sleep', '1'], dependsOn: [short.id] });
    await settle('queue on-hold', statuses('on-hold'), { active: 0, inadmissible: 0, held: 1 });
    await settle('queue one', statuses('one'), { active: 0, inadmissible: 1, held: 1 });
    const m = await metrics();
    // The older family counts what the scheduler holds: not the job waiting for its dependency.
    assert.equal(m.get('berth_queue_pending_jobs{queue="one"}'), 1);
    assert.equal(m.get('berth_queue_pending_jobs{queue="on-hold"}'), 1);
    await cancel(held.id, holder.id, short.id, after.id);
    await settle('queue one, emptied', statuses('one'), { active: 0, inadmissible: 0, held: 0 });
    await settle('queue on-hold, emptied', statuses('on-hold'), { active: 0, inadmissible: 0, held: 0 });
  });

  void test("counts a Backfill queue's reservation, what it lets through, and how far an estimate landed", async () => {
    const reservations = (m: Map<string, number>) => ({
      backfill: m.get('berth_scheduler_reservations{queue="bf",kind="backfill"}'),
      preemption: m.get('berth_scheduler_reservations{queue="bf",kind="preemption"}'),
    });
    const holder = await job('bf', {
      command: ['sleep', '600'],
      requests: { cpu: '1' },
      timeoutSeconds: 900,
    });
    await running(holder.id);
    // Does not fit: reserved for when the holder's timeout is up.
    const wide = await job('bf', { command: ['sleep', '1'], requests: { cpu: '2' }, timeoutSeconds: 60 });
    // Without a timeout it may only use what the reservation leaves, which is nothing.
    const untimed = await job('bf', { command: ['sleep', '1'], requests: { cpu: '1' } });
    await settle('the reservation', reservations, { backfill: 1, preemption: 0 });
    await settle('queue bf', statuses('bf'), { active: 0, inadmissible: 2, held: 0 });
    // Its user is shown when it should start: by the holder's timeout.
    const shown = await waitFor('an estimate for the wide job', async () => {
      const at = (await ctx.api<{ estimatedStartAt: string | null }>(ctx.admin, 'GET', `/jobs/${wide.id}`))
        .body.estimatedStartAt;
      return typeof at === 'string' ? Date.parse(at) : undefined;
    });
    assert.ok(shown - Date.now() > 600_000, `estimated at ${new Date(shown).toISOString()}`);

    const before = await metrics();
    // Done long before the reservation: it goes now, ahead of both.
    const quick = await job('bf', { command: ['sleep', '0.2'], requests: { cpu: '1' }, timeoutSeconds: 30 });
    assert.equal((await waitDone(ctx.server.api, ctx.admin, quick.id)).state, 'succeeded');
    const admitted = (await events(ctx.server.api, ctx.admin, quick.id)).find((e) => e.type === 'admitted');
    assert.match(admitted?.message ?? '', /backfilled ahead of job/);
    const now = await metrics();
    const moved = (m: Map<string, number>, name: string) => (m.get(name) ?? 0) - (before.get(name) ?? 0);
    assert.equal(moved(now, 'berth_backfilled_jobs_total{queue="bf"}'), 1);
    assert.ok((now.get('berth_scheduler_pass_depth') ?? 0) >= 1, 'the last pass tried a workload');
    // Kueue's attempts by result: the quick job admitted; the wide and the untimed ones tried and
    // found inadmissible at least once each since the server started.
    assert.ok(moved(now, 'berth_admission_attempts_total{result="admitted"}') >= 1);
    assert.ok((now.get('berth_admission_attempts_total{result="inadmissible"}') ?? 0) >= 2);
    assert.ok(moved(now, 'berth_scheduler_pass_duration_seconds_count') >= 1, 'its pass timed');

    // The holder goes: the wide job is admitted about a quarter of an hour before its estimate.
    await cancel(holder.id);
    await running(wide.id);
    const end = await metrics();
    assert.equal(moved(end, 'berth_start_estimate_error_seconds_count{admitted="early"}'), 1);
    assert.equal(moved(end, 'berth_start_estimate_error_seconds_count{admitted="late"}'), 0);
    const error = moved(end, 'berth_start_estimate_error_seconds_sum{admitted="early"}');
    assert.ok(error > 600 && error < 1000, `off by ${error} s`);
    await cancel(wide.id, untimed.id);
    await settle('no reservation once the queue is empty', reservations, { backfill: 0, preemption: 0 });
  });

  void test("counts a running job's worker, resource instance and device by state", async () => {
    const workers = (factory: string) => (m: Map<string, number>) =>
      Object.fromEntries(
        ['creating', 'ready', 'idle', 'destroying'].map((s) => [
          s,
          m.get(`berth_workers{factory="${factory}",state="${s}"}`),
        ]),
      );
    const gpus = (m: Map<string, number>) => ({
      total: m.get('berth_factory_devices{factory="local",kind="gpu"}'),
      inUse: m.get('berth_factory_devices_in_use{factory="local",kind="gpu"}'),
    });
    const licences = (m: Map<string, number>) =>
      Object.fromEntries(
        ['creating', 'ready', 'destroying'].map((s) => [
          s,
          m.get(`berth_resource_instances{well="licence",state="${s}"}`),
        ]),
      );
    const none = { creating: 0, ready: 0, idle: 0, destroying: 0 };
    await settle('no local workers yet', workers('local'), none);
    await settle('two gpus, none held', gpus, { total: 2, inUse: 0 });
    const j = await job('gpus', {
      target: 'local',
      command: ['sleep', '60'],
      requests: { gpu: '1' },
      resources: ['licence'],
    });
    await running(j.id);
    await settle('its worker', workers('local'), { ...none, ready: 1 });
    await settle('its device', gpus, { total: 2, inUse: 1 });
    await settle('its licence', licences, { creating: 0, ready: 1, destroying: 0 });
    await cancel(j.id);
    await waitDone(ctx.server.api, ctx.admin, j.id);
    await settle('its worker gone', workers('local'), none);
    await settle('its device back', gpus, { total: 2, inUse: 0 });
    await settle('its licence gone', licences, { creating: 0, ready: 0, destroying: 0 });
  });
});
