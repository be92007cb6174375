/**
 * Preemption of a job that holds quota but has no worker yet (its factory is full): it is
 * requeued at once, without ever having run, and the preemptor takes its place in line.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Env, peak } from './support.js';

const env = Env.use(2);

describe('preempting a job that waits for a worker', () => {
  it('requeues it at once; it runs later and succeeds', async () => {
    await env.queue({
      name: 'wq',
      quota: { cpu: '4' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    const low = env.gate('wq-low');
    const high = env.gate('wq-high');
    const l1 = await env.blocking('wq', low, { cpu: 1 });
    const l2 = await env.blocking('wq', low, { cpu: 1 });
    for (const j of [l1, l2]) await env.running(j.id);
    // The factory runs two jobs at once: l3 holds quota but waits for a worker.
    const later = env.gate('wq-l3');
    const l3 = await env.blocking('wq', later, { cpu: 1 });
    await env.until(
      l3.id,
      'to wait for a worker',
      (j) => j.state === 'admitted' && /waiting for a worker/.test(j.reason),
    );

    // h needs 2 cpu, 1 is free: the most recently admitted, l3, is the victim.
    const h = await env.blocking('wq', high, { cpu: 2, priority: 10 });
    const victim = await env.until(l3.id, 'to be requeued', (j) => j.state === 'queued' && j.attempts === 1);
    assert.match(victim.reason, /waiting for quota in queue wq/);
    const ev = await env.events(l3.id);
    assert.deepEqual(
      ev.map((e) => e.type),
      ['submitted', 'admitted', 'requeued'],
    );
    assert.match(ev[2]!.message, new RegExp(`preempted by job ${h.id}\\b`));
    assert.deepEqual(await env.workers(l3.id), [], 'l3 never had a worker');
    assert.equal(env.pids(l3.id).length, 0, 'l3 never ran');
    await env.until(h.id, 'to be admitted', (j) => j.state === 'admitted');
    for (const j of [l1, l2]) assert.equal((await env.job(j.id)).attempts, 0);

    // Workers free up: h first (it is first in line), then l3.
    low.open();
    await env.running(h.id);
    await env.running(l3.id);
    high.open();
    later.open();
    for (const j of [l1, l2, l3, h]) assert.equal((await env.done(j.id)).state, 'succeeded');
    assert.equal((await env.job(l3.id)).attempts, 1);
    const hold = await env.holdings([l1, l2, l3, h]);
    assert.ok(peak(hold, 'cpu') <= 4, 'wq above its quota');
  });
});
