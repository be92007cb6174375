/**
 * The metrics an SLO on waiting is written over (issue #43): the admission and start wait
 * histograms agree with the jobs' own timestamps (each job's wait, computed from its record, lands
 * in the histogram's sum and in its buckets); the quota gauges say what the queue was given, cpu
 * in cores; an eviction is counted by its reason; the API's requests are counted by route
 * template, never by path.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { WAIT_BUCKETS } from '../../src/metrics/queue-metrics.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { samples } from '../helpers/metrics.js';
import { assertStatus, useServer, type ApiServer } from './fixtures.js';

const CONFIG = [
  'factories:',
  '  local: { kind: local, capacity: 8 }',
  'targets:',
  '  local: { factory: local }',
].join('\n');

async function scrape(ctx: ApiServer): Promise<Map<string, number>> {
  const res = await ctx.api<string>(ctx.admin, 'GET', '/metrics');
  assertStatus(res, 200);
  return samples(res.text);
}

void describe('queue and API metrics', () => {
  const ctx = useServer(
    async (c) => {
      const queue = {
        name: 'one',
        quota: { cpu: '1500m', memory: '1Gi' },
        cohort: 'lab',
        borrowingLimit: { cpu: '2' },
      };
      assertStatus(await c.api(c.admin, 'POST', '/cluster-queues', queue), 201);
      assertStatus(await c.api(c.admin, 'POST', '/projects', { name: 'serial', clusterQueue: 'one' }), 201);
    },
    { config: CONFIG },
  );

  void test("the wait histograms agree with the jobs' own timestamps", async () => {
    const before = await scrape(ctx);
    // One cpu's worth at a time: each job waits for the one before it.
    const ids: number[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        (
          await submit(ctx.server.api, ctx.admin, 'serial', {
            command: ['sleep', '0.3'],
            requests: { cpu: '1' },
          })
        ).id,
      );
    for (const id of ids) assert.equal((await waitDone(ctx.server.api, ctx.admin, id)).state, 'succeeded');
    const after = await scrape(ctx);
    const moved = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    type Times = { createdAt: string; admittedAt: string; startedAt: string };
    const jobs = await Promise.all(
      ids.map(async (id) => (await ctx.api<Times>(ctx.admin, 'GET', `/jobs/${id}`)).body),
    );
    const ms = (iso: string) => Date.parse(iso);
    const waits = {
      admission: jobs.map((j) => (ms(j.admittedAt) - ms(j.createdAt)) / 1000),
      start: jobs.map((j) => (ms(j.startedAt) - ms(j.createdAt)) / 1000),
    };
    // The jobs waited for each other: the last for about three runs of the others.
    assert.ok(Math.max(...waits.admission) >= 0.6, `waited: ${waits.admission.join(', ')}`);
    for (const [kind, each] of Object.entries(waits)) {
      const name = `berth_${kind}_wait_seconds`;
      assert.equal(moved(`${name}_count{queue="one"}`), ids.length, `${name}: one per job`);
      const sum = each.reduce((a, b) => a + b, 0);
      // The records keep milliseconds; the histogram the same instants' difference.
      assert.ok(
        Math.abs(moved(`${name}_sum{queue="one"}`) - sum) < 0.005 * ids.length,
        `${name}: sum ${sum}`,
      );
      for (const le of WAIT_BUCKETS)
        assert.equal(
          moved(`${name}_bucket{le="${le}",queue="one"}`),
          each.filter((w) => w <= le).length,
          `${name}: bucket ${le}`,
        );
    }
  });

  void test('shows each queue’s quota, cohort and limits in base units', async () => {
    const now = await scrape(ctx);
    assert.equal(now.get('berth_queue_nominal_quota{queue="one",cohort="lab",resource="cpu"}'), 1.5);
    assert.equal(now.get('berth_queue_nominal_quota{queue="one",cohort="lab",resource="memory"}'), 2 ** 30);
    assert.equal(now.get('berth_queue_borrowing_limit{queue="one",cohort="lab",resource="cpu"}'), 2);
    assert.equal(
      now.get('berth_queue_borrowing_limit{queue="one",cohort="lab",resource="memory"}'),
      undefined,
    );
  });

  void test('counts requests by route template, method and code, not by path', async () => {
    const before = await scrape(ctx);
    for (const id of [1, 2, 3]) assertStatus(await ctx.api(ctx.admin, 'GET', `/jobs/${id}`), 200);
    assert.equal((await ctx.api(ctx.admin, 'GET', '/jobs/999999')).status, 404);
    assert.equal((await ctx.api(ctx.admin, 'GET', '/no/such/route')).status, 404);
    const after = await scrape(ctx);
    const moved = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
    assert.equal(moved('berth_http_requests_total{route="/api/v1/jobs/:id",method="GET",code="200"}'), 3);
    assert.equal(moved('berth_http_requests_total{route="/api/v1/jobs/:id",method="GET",code="404"}'), 1);
    assert.equal(moved('berth_http_requests_total{route="unmatched",method="GET",code="404"}'), 1);
    assert.ok(moved('berth_http_request_duration_seconds_count{route="/api/v1/jobs/:id"}') >= 4);
    assert.ok(![...after.keys()].some((k) => k.includes('/jobs/1"')), 'no series names a job');
  });
});
