/**
 * Reclaiming lent quota (reclaimWithinCohort: Any), end to end: a queue that borrowed while its
 * lender was idle gives the quota back when the lender's jobs arrive. QUEUEING.md "Preemption".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { alive, Env, inQueue, peak, type Job } from './support.js';

const env = Env.use();

describe('reclaim within cohort', () => {
  it("preempts the borrower's jobs until the lender is back at its nominal quota", async () => {
    await env.queue({
      name: 'owner',
      cohort: 'rc',
      quota: { cpu: '4' },
      preemption: { reclaimWithinCohort: 'Any' },
    });
    await env.queue({ name: 'borrower', cohort: 'rc', quota: { cpu: '4' } });
    const bGate = env.gate('borrower');
    const aGate = env.gate('owner');

    // owner is idle: borrower takes the whole cohort, 4 of it borrowed.
    const bs: Job[] = [];
    const pids = new Map<number, number>();
    for (let i = 0; i < 4; i++) {
      const j = await env.blocking('borrower', bGate, { cpu: 2 });
      bs.push(j);
      pids.set(j.id, (await env.running(j.id))[0]!);
    }
    assert.deepEqual((await env.queueView('borrower')).borrowed, { cpu: '4' });

    const reclaimed = 'berth_preempted_jobs_total{preempting_queue="owner",reason="reclaim_in_cohort"}';
    const before = await env.metric(reclaimed);

    // owner's jobs arrive, of a lower priority even: Any reclaims regardless.
    const as: Job[] = [];
    for (let i = 0; i < 2; i++) as.push(await env.blocking('owner', aGate, { cpu: 2, priority: -5 }));
    for (const a of as) await env.running(a.id);

    const victims: Job[] = [];
    for (const b of bs) if ((await env.types(b.id)).includes('requeued')) victims.push(b);
    assert.equal(victims.length, 2, 'exactly the borrowed 4 cpu were reclaimed');
    // Counted as reclaimed, for the owner (issue #43).
    assert.equal((await env.metric(reclaimed)) - before, 2);
    const preemptors = new Set<number>();
    for (const v of victims) {
      const pid = pids.get(v.id)!;
      await waitFor(`pid ${pid} of victim ${v.id} to be gone`, () => !alive(pid));
      const j = await env.job(v.id);
      assert.equal(j.state, 'queued');
      assert.equal(j.attempts, 1);
      assert.equal(j.createdAt, v.createdAt);
      const requeued = (await env.events(v.id)).find((e) => e.type === 'requeued')!;
      const m = /preempted by job (\d+)/.exec(requeued.message);
      assert.ok(m, requeued.message);
      preemptors.add(Number(m[1]));
      assert.match(requeued.message, /reclaiming quota lent to the cohort/);
      assert.match(j.reason, /cohort rc/);
    }
    assert.deepEqual(
      [...preemptors].sort((x, y) => x - y),
      as.map((a) => a.id),
      'each owner job reclaimed once',
    );
    for (const b of bs.filter((x) => !victims.includes(x))) {
      const j = await env.job(b.id);
      assert.equal(j.state, 'running');
      assert.equal(j.attempts, 0);
    }
    const owner = await env.queueView('owner');
    const borrower = await env.queueView('borrower');
    assert.equal(owner.usage.cpu, '4');
    assert.deepEqual(owner.borrowed, {});
    assert.equal(borrower.usage.cpu, '4');
    assert.deepEqual(borrower.borrowed, {});

    // When the owner is done the victims borrow again and everything succeeds.
    aGate.open();
    for (const a of as) assert.equal((await env.done(a.id)).state, 'succeeded');
    for (const v of victims) await env.running(v.id, 2);
    bGate.open();
    for (const b of bs) assert.equal((await env.done(b.id)).state, 'succeeded');

    const h = await env.holdings([...bs, ...as]);
    assert.ok(peak(h, 'cpu') <= 8, 'cohort above the sum of nominals');
    assert.ok(peak(h, 'cpu', inQueue('owner')) <= 4, 'owner above its nominal');
    assert.ok(peak(h, 'cpu', inQueue('borrower')) <= 8);
  });

  it('keeps the quota its victims free for the preemptor, even when one victim stops before the other', async () => {
    await env.queue({
      name: 'owner2',
      cohort: 'rc2',
      quota: { cpu: '4' },
      preemption: { reclaimWithinCohort: 'Any' },
    });
    await env.queue({ name: 'borrower2', cohort: 'rc2', quota: { cpu: '4' } });
    const bGate = env.gate('borrower2');
    const aGate = env.gate('owner2');
    const bs: Job[] = [];
    let a: Job | undefined;
    try {
      // b3 and b4 are the most recently admitted: the victims. b3 obeys SIGTERM at once, b4
      // ignores it and ends only by SIGKILL a grace period (1 s) later.
      for (const term of ['record', 'record', 'record', 'ignore'] as const) {
        const j = await env.blocking('borrower2', bGate, { cpu: 2, term });
        bs.push(j);
        await env.running(j.id);
      }
      const [b1, b2, b3, b4] = bs as [Job, Job, Job, Job];

      // One owner job needs all 4 of owner2's nominal cpu back: b3 and b4 must go.
      a = await env.blocking('owner2', aGate, { cpu: 4 });
      const owner = a;
      await env.until(owner.id, 'to run', (j) => j.state === 'running', 10_000);

      // Exactly b3 and b4 were preempted, once each: b3's 2 cpu were kept for the preemptor
      // while b4 was still stopping, not lent out again.
      for (const b of [b1, b2]) {
        assert.ok(!(await env.types(b.id)).includes('requeued'), `job ${b.id} was preempted`);
      }
      for (const v of [b3, b4]) {
        const j = await env.job(v.id);
        assert.equal(j.state, 'queued', `job ${v.id}`);
        assert.equal(j.attempts, 1, `job ${v.id} was preempted ${j.attempts} times`);
        const requeued = (await env.events(v.id)).filter((e) => e.type === 'requeued');
        assert.match(requeued[0]?.message ?? '', new RegExp(`preempted by job ${owner.id}\\b`));
      }
      const ownerView = await env.queueView('owner2');
      assert.equal(ownerView.usage.cpu, '4');
    } finally {
      aGate.open();
      bGate.open();
      for (const j of a ? [...bs, a] : bs) await env.done(j.id);
    }
    for (const j of a ? [...bs, a] : bs) assert.equal((await env.job(j.id)).state, 'succeeded');
    const h = await env.holdings(a ? [...bs, a] : bs);
    assert.ok(peak(h, 'cpu') <= 8, 'cohort above the sum of nominals');
    assert.ok(peak(h, 'cpu', inQueue('owner2')) <= 4, 'owner2 above its nominal');
  });
});
