/**
 * stopPolicy HoldAndDrain, end to end: running jobs are stopped and requeued, nothing new is
 * admitted, and stopPolicy None lets everything run to success.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { EVICTED_ONCE_THEN_SUCCEEDED } from '../helpers/jobs.js';
import { alive, Env, peak, type Job } from './support.js';

const env = Env.use();

describe('HoldAndDrain', () => {
  it('stops and requeues running jobs, admits nothing, and None resumes them', async () => {
    await env.queue({ name: 'dq', quota: { cpu: '2' } });
    const gate = env.gate('dq');
    const j1 = await env.blocking('dq', gate, { cpu: 1 });
    const j2 = await env.blocking('dq', gate, { cpu: 1 });
    const j3 = await env.blocking('dq', gate, { cpu: 1 });
    const pids = new Map<number, number>();
    for (const j of [j1, j2]) pids.set(j.id, (await env.running(j.id))[0]!);
    assert.equal((await env.job(j3.id)).state, 'queued');

    await env.patchQueue('dq', { stopPolicy: 'HoldAndDrain' });
    for (const j of [j1, j2]) {
      await env.until(j.id, 'to be drained', (x) => x.state === 'queued' && x.attempts === 1);
      const pid = pids.get(j.id)!;
      await waitFor(`pid ${pid} of job ${j.id} to be gone`, () => !alive(pid));
      const requeued = (await env.events(j.id)).filter((e) => e.type === 'requeued');
      assert.equal(requeued.length, 1);
      assert.match(requeued[0]!.message, /queue dq is being drained \(HoldAndDrain\)/);
    }

    // Held: nothing is admitted, not the drained jobs, not the one that waited, not a new one.
    const j4 = await env.blocking('dq', gate, { cpu: 1 });
    const all: Job[] = [j1, j2, j3, j4];
    await env.barrier();
    for (const j of all) {
      const now = await env.job(j.id);
      assert.equal(now.state, 'queued', `job ${j.id}`);
      assert.match(now.reason, /queue dq is on hold and draining/);
    }
    const held = await env.queueView('dq');
    assert.equal(held.admitted, 0);
    assert.equal(held.pending, 4);
    assert.equal(env.pids(j3.id).length, 0, 'j3 never ran');

    await env.patchQueue('dq', { stopPolicy: 'None' });
    // The drained jobs kept their place: they go first.
    for (const j of [j1, j2]) await env.running(j.id, 2);
    assert.equal((await env.job(j3.id)).state, 'queued');
    gate.open();
    for (const j of all) assert.equal((await env.done(j.id)).state, 'succeeded');
    for (const j of [j1, j2]) {
      assert.equal((await env.job(j.id)).attempts, 1);
      assert.deepEqual(await env.types(j.id), EVICTED_ONCE_THEN_SUCCEEDED);
    }
    const h = await env.holdings(all);
    assert.ok(peak(h, 'cpu') <= 2, 'dq above its quota');
  });
});
