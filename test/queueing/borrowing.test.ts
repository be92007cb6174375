/**
 * Borrowing and lending between the queues of a cohort, end to end: real server, real jobs.
 * QUEUEING.md "Capacity" and "Admission".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Env, inQueue, peak, type Job } from './support.js';

const env = Env.use();

describe('borrowing', () => {
  it('a full queue borrows unused cohort quota up to its borrowing limit, and no further', async () => {
    await env.queue({ name: 'a1', cohort: 'c1', quota: { cpu: '4' }, borrowingLimit: { cpu: '2' } });
    await env.queue({ name: 'b1', cohort: 'c1', quota: { cpu: '4' } });
    const gate = env.gate('borrow');
    const jobs: Job[] = [];

    // A fills its nominal quota.
    const a1 = await env.blocking('a1', gate, { cpu: 2 });
    const a2 = await env.blocking('a1', gate, { cpu: 2 });
    jobs.push(a1, a2);
    for (const j of [a1, a2]) await env.running(j.id);
    for (const j of [a1, a2]) assert.equal((await env.job(j.id)).borrowed, null);

    // One more fits only by borrowing B's unused quota.
    const a3 = await env.blocking('a1', gate, { cpu: 2 });
    jobs.push(a3);
    await env.running(a3.id);
    const borrower = await env.job(a3.id);
    assert.deepEqual(borrower.borrowed, { cpu: '2' });
    const admitted = (await env.events(a3.id)).find((e) => e.type === 'admitted');
    assert.match(admitted?.message ?? '', /admitted by cluster queue a1 borrowing cpu 2/);
    const qa = await env.queueView('a1');
    assert.deepEqual(qa.usage.cpu, '6');
    assert.deepEqual(qa.borrowed, { cpu: '2' });

    // A is at nominal + borrowingLimit: a further job waits although B still has 2 cpu unused.
    const a4 = await env.blocking('a1', gate, { cpu: 1 });
    jobs.push(a4);
    // B uses what is left of its own quota: proof the pool had room, so only A's limit blocks a4.
    const b1 = await env.blocking('b1', gate, { cpu: 1 });
    const b2 = await env.blocking('b1', gate, { cpu: 1 });
    jobs.push(b1, b2);
    for (const j of [b1, b2]) await env.running(j.id);
    await env.barrier();
    const waiting = await env.job(a4.id);
    assert.equal(waiting.state, 'queued');
    assert.match(waiting.reason, /queue a1: cpu 6\/6 in use, needs 1/);
    assert.equal(waiting.position, 1);
    for (const j of [b1, b2]) assert.equal((await env.job(j.id)).borrowed, null);

    // More than A can ever reach (4 + 2) is refused outright.
    const tooBig = await env.req<{ error: { message: string } }>('POST', '/projects/a1/jobs', {
      command: ['true'],
      requests: { cpu: '7' },
    });
    assert.equal(tooBig.status, 422, tooBig.text);
    assert.match(
      tooBig.body.error.message,
      /requests\.cpu: 7 is more than cluster queue "a1" can ever grant \(6\)/,
    );

    gate.open();
    for (const j of jobs) assert.equal((await env.done(j.id)).state, 'succeeded');
    assert.deepEqual(await env.types(a4.id), [
      'submitted',
      'admitted',
      'worker-creating',
      'started',
      'succeeded',
    ]);

    const h = await env.holdings(jobs);
    assert.ok(peak(h, 'cpu', inQueue('a1')) <= 6, 'a1 above nominal + borrowingLimit');
    assert.ok(peak(h, 'cpu', inQueue('b1')) <= 4, 'b1 above nominal');
    assert.ok(peak(h, 'cpu') <= 8, 'cohort above the sum of nominals');
    assert.equal(peak(h, 'cpu', inQueue('a1')), 6, 'a1 did borrow');
  });

  it("a lender's lendingLimit caps what others may borrow from it", async () => {
    await env.queue({ name: 'a2', cohort: 'c2', quota: { cpu: '4' } });
    await env.queue({ name: 'b2', cohort: 'c2', quota: { cpu: '4' }, lendingLimit: { cpu: '1' } });
    const gate = env.gate('lend');
    const jobs: Job[] = [];

    const a1 = await env.blocking('a2', gate, { cpu: 2 });
    const a2 = await env.blocking('a2', gate, { cpu: 2 });
    jobs.push(a1, a2);
    for (const j of [a1, a2]) await env.running(j.id);

    // B lends only 1 cpu: a 2-cpu job waits for the cohort; a 1-cpu job (submitted after) borrows it.
    const big = await env.blocking('a2', gate, { cpu: 2 });
    const small = await env.blocking('a2', gate, { cpu: 1 });
    jobs.push(big, small);
    await env.running(small.id);
    assert.deepEqual((await env.job(small.id)).borrowed, { cpu: '1' });
    await env.barrier();
    const waiting = await env.job(big.id);
    assert.equal(waiting.state, 'queued');
    assert.match(waiting.reason, /waiting for cohort c2 to free cpu: needs 2, 0 free/);

    // B keeps its private 3 cpu; the 1 it lent is in use by a2, so a 4th cpu for B must wait.
    const b1 = await env.blocking('b2', gate, { cpu: 3 });
    const b2 = await env.blocking('b2', gate, { cpu: 1 });
    jobs.push(b1, b2);
    await env.running(b1.id);
    await env.barrier();
    const lenderWaits = await env.job(b2.id);
    assert.equal(lenderWaits.state, 'queued');
    assert.match(lenderWaits.reason, /cpu/);

    // What a2 can ever reach is 4 + 1.
    const tooBig = await env.req('POST', '/projects/a2/jobs', { command: ['true'], requests: { cpu: '6' } });
    assert.equal(tooBig.status, 422, tooBig.text);

    gate.open();
    for (const j of jobs) assert.equal((await env.done(j.id)).state, 'succeeded');

    const h = await env.holdings(jobs);
    assert.ok(peak(h, 'cpu', inQueue('a2')) <= 5, 'a2 borrowed more than b2 lends');
    assert.ok(peak(h, 'cpu', inQueue('b2')) <= 4, 'b2 above nominal');
    assert.ok(peak(h, 'cpu') <= 8, 'cohort above the sum of nominals');
  });
});
