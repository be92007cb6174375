/**
 * Backfill end to end: real server, real jobs, the jobs' timeouts as what the scheduler plans
 * with. QUEUEING.md "Backfill".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Env } from './support.js';

const env = Env.use();

describe('backfill', () => {
  it('a short job with a timeout starts ahead of a blocked wide job; a job that would delay it waits', async () => {
    await env.queue({ name: 'bf', quota: { cpu: '4' }, queueingStrategy: 'Backfill' });
    const gate = env.gate('bf');
    const holder = await env.submit('bf', { script: gate.wait, requests: { cpu: '3' }, timeoutSeconds: 600 });
    await env.running(holder.id, 0);
    // Does not fit: reserved for when the holder's timeout is up.
    const wide = await env.submit('bf', { command: ['true'], requests: { cpu: '4' }, timeoutSeconds: 60 });
    // Fits in the free cpu, but would still hold it then.
    const long = await env.submit('bf', { command: ['true'], requests: { cpu: '1' }, timeoutSeconds: 3600 });
    await env.barrier();
    assert.deepEqual((await env.queueView('bf')).usage, { cpu: '3', jobs: '1' });
    for (const j of [wide, long]) assert.equal((await env.job(j.id)).state, 'queued');
    // berth status says why: the reservation, and whose start the long one would delay.
    const view = await env.req<{ reason: string; estimatedStartAt: string | null }>(
      'GET',
      `/jobs/${wide.id}`,
    );
    const reserved = /^reserved to start at (\S+): cpu 4 of queue bf, when the jobs running/.exec(
      view.body.reason,
    );
    assert.ok(reserved?.[1], view.body.reason);
    // The holder's timeout from its admission. The start-time estimate counts it from the holder's
    // start, as the server enforces it: later by no more than the holder took to start.
    const h = await env.req<{ admittedAt: string; startedAt: string }>('GET', `/jobs/${holder.id}`);
    const [admittedMs, startedMs] = [Date.parse(h.body.admittedAt), Date.parse(h.body.startedAt)];
    const at = Date.parse(reserved[1]);
    assert.ok(Math.abs(at - (admittedMs + 600_000)) < 1000, `${reserved[1]}, ${h.text}`);
    const estimate = Date.parse(view.body.estimatedStartAt ?? '');
    assert.ok(estimate >= at - 1000 && estimate <= at + (startedMs - admittedMs) + 1000, view.text);
    assert.match(
      (await env.job(long.id)).reason,
      new RegExp(`^waiting for job ${wide.id}, reserved to start at `),
    );

    // Done long before: it goes now, ahead of both.
    const short = await env.submit('bf', { script: gate.wait, requests: { cpu: '1' }, timeoutSeconds: 60 });
    await env.running(short.id, 0);
    assert.equal((await env.job(wide.id)).state, 'queued');

    gate.open();
    for (const j of [holder, wide, long, short]) assert.equal((await env.done(j.id)).state, 'succeeded');
    const admittedAt = async (id: number) => {
      const e = (await env.events(id)).find((x) => x.type === 'admitted');
      assert.ok(e, `job ${id} was admitted`);
      return e.id;
    };
    assert.ok((await admittedAt(short.id)) < (await admittedAt(wide.id)), 'short before wide');
    const admitted = (await env.events(short.id)).find((e) => e.type === 'admitted');
    assert.equal(admitted?.message, `admitted by cluster queue bf, backfilled ahead of job ${wide.id}`);
    assert.ok((await admittedAt(wide.id)) < (await admittedAt(long.id)), 'wide before long');
  });

  it('with learned estimates, a job predicted short by the runtimes of jobs like it is backfilled', async () => {
    await env.queue({ name: 'bfl', quota: { cpu: '4' }, queueingStrategy: 'Backfill', estimates: 'learned' });
    const quick = { command: ['true'], name: 'quick', requests: { cpu: '1' }, timeoutSeconds: 600 };
    // One like it has run, in well under its 600 s.
    const first = await env.submit('bfl', quick);
    assert.equal((await env.done(first.id)).state, 'succeeded');
    const gate = env.gate('bfl');
    const holder = await env.submit('bfl', {
      script: gate.wait,
      requests: { cpu: '3' },
      timeoutSeconds: 600,
    });
    await env.running(holder.id, 0);
    const wide = await env.submit('bfl', { command: ['true'], requests: { cpu: '4' }, timeoutSeconds: 60 });
    // By its timeout it would end after the holder's (600 s from now, against 600 s from before):
    // with requested estimates it would wait; predicted to take well under a second, it goes.
    const again = await env.submit('bfl', quick);
    assert.equal((await env.done(again.id)).state, 'succeeded');
    assert.equal((await env.job(wide.id)).state, 'queued');
    assert.equal((await env.queueView('bfl')).estimates, 'learned');
    gate.open();
    for (const j of [holder, wide]) assert.equal((await env.done(j.id)).state, 'succeeded');
  });
});
