/**
 * `berth diag` (GET /diag), sdiag for berth (issue #43): an admin sees the scheduler's and the
 * controller's cycles since the start, what waits per queue and factory, and the busiest routes
 * and callers, counted by route template and by caller; anyone else is refused in one line. The
 * tallies behind it are bounded and ordered (a table of cases).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CycleStats, RequestTally } from '../../src/metrics/diag.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { fails, ok, parseJson, useCliServer } from './cli.js';
import type { DiagView } from '../../src/domain/diag.js';

describe('berth diag', () => {
  const cli = useCliServer();

  it('shows the cycles, what waits, and the busiest routes and callers since the start', async () => {
    const job = await submit(cli.server.api, cli.server.adminToken, 'default', { command: ['true'] });
    await waitDone(cli.server.api, cli.server.adminToken, job.id);
    for (let i = 0; i < 25; i++) ok(await cli.admin(['status', String(job.id), '-o', 'json']));
    const d = parseJson<DiagView>(await cli.admin(['diag', '-o', 'json']));
    assert.ok(d.scheduler.count >= 1, 'a pass admitted the job');
    assert.ok(d.scheduler.maxSeconds >= d.scheduler.meanSeconds && d.scheduler.meanSeconds > 0);
    assert.ok(d.ticks.count >= d.scheduler.count);
    assert.equal(d.leading, true);
    assert.deepEqual(
      d.queues.find((q) => q.name === 'default'),
      { name: 'default', pending: 0, admitted: 0 },
    );
    const route = d.routes.find((r) => r.route === '/api/v1/jobs/:id');
    assert.ok(route && route.requests >= 25, JSON.stringify(d.routes));
    assert.equal(d.routes[0]?.route, '/api/v1/jobs/:id', 'the busiest first');
    assert.ok(!d.routes.some((r) => /\/jobs\/\d/.test(r.route)), 'templates, never paths');
    assert.ok(
      (d.callers.find((c) => c.caller === 'user admin')?.requests ?? 0) >= 25,
      JSON.stringify(d.callers),
    );
    const text = ok(await cli.admin(['diag']));
    assert.match(text, /^scheduler passes: +\d+; last [\d.]+ m?s, mean [\d.]+ m?s, max [\d.]+ m?s$/m);
    assert.match(text, /^\/api\/v1\/jobs\/:id +\d+ /m);
    assert.match(text, /^user admin +\d+$/m);
  });

  it('is for admins: anyone else is refused in one line', async () => {
    const alice = (await cli.request<{ token: string }>('POST', '/users', { name: 'alice' })).token;
    fails(await cli.as(alice)(['diag']), 1, /only admins/);
  });
});

describe('the tallies behind berth diag', () => {
  it('keeps count, last, mean and max of a cycle', () => {
    const c = new CycleStats();
    assert.deepEqual(c.view(), { count: 0, lastSeconds: 0, meanSeconds: 0, maxSeconds: 0 });
    for (const s of [0.5, 2, 0.25, 1.25]) c.observe(s);
    assert.deepEqual(c.view(), { count: 4, lastSeconds: 1.25, meanSeconds: 1, maxSeconds: 2 });
  });

  it('lists the busiest routes and callers first, ten at most, ties by name', () => {
    const t = new RequestTally();
    for (let r = 0; r < 15; r++)
      for (let n = 0; n <= r; n++) t.add(`/r${r}`, n % 2 ? 'jobs' : 'user a', 0.001 * (n + 1));
    t.add('/tie', 'user b', 1);
    t.add('/tia', 'user b', 1);
    const routes = t.busiestRoutes();
    assert.equal(routes.length, 10);
    assert.deepEqual(
      routes.slice(0, 3).map((r) => [r.route, r.requests]),
      [
        ['/r14', 15],
        ['/r13', 14],
        ['/r12', 13],
      ],
    );
    assert.equal(routes[0]!.maxSeconds, 0.015);
    assert.ok(Math.abs(routes[0]!.meanSeconds - 0.008) < 1e-9);
    const few = new RequestTally();
    few.add('/tie', 'x', 1);
    few.add('/tia', 'x', 1);
    assert.deepEqual(
      few.busiestRoutes().map((r) => r.route),
      ['/tia', '/tie'],
    );
    assert.deepEqual(
      t.busiestCallers().map((c) => c.caller),
      ['user a', 'jobs', 'user b'],
    );
  });
});
