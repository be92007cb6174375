/**
 * Preemption inside one queue, end to end: victims are really stopped (their processes end),
 * return to their queue at their old place with a timeline entry naming the preemptor, and run
 * again later. QUEUEING.md "Preemption".
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { agentHost } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';
import { EVICTED_ONCE_THEN_SUCCEEDED } from '../helpers/jobs.js';
import { alive, Env, inQueue, peak, type Job } from './support.js';

const env = Env.use();

describe('preemption within a queue (LowerPriority)', () => {
  it('stops the minimal set of lower-priority jobs, which come back and succeed after', async () => {
    await env.queue({
      name: 'pq',
      quota: { cpu: '4' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    const low = env.gate('pq-low');
    const high = env.gate('pq-high');

    // Admitted in this order: l1 (2 cpu), l2 (1), l3 (1); the queue is full.
    // l1 exits on SIGTERM (and says so); l3 ignores it, so only the SIGKILL after the grace period ends it.
    const l1 = await env.blocking('pq', low, { cpu: 2, term: 'record' });
    const firstPids = new Map<number, number>();
    firstPids.set(l1.id, (await env.running(l1.id))[0]!);
    const l2 = await env.blocking('pq', low, { cpu: 1 });
    firstPids.set(l2.id, (await env.running(l2.id))[0]!);
    const l3 = await env.blocking('pq', low, { cpu: 1, term: 'ignore' });
    firstPids.set(l3.id, (await env.running(l3.id))[0]!);
    const lows = [l1, l2, l3];
    const preempted = 'berth_preempted_jobs_total{preempting_queue="pq",reason="in_queue"}';
    const before = await env.metric(preempted);

    // h needs 3 cpu. Taking the most recently admitted first: l3, l2, then l1 makes it fit;
    // putting l2 back still fits, so the minimal set is {l1, l3} and l2 keeps running.
    const h = await env.blocking('pq', high, { cpu: 3, priority: 10 });
    for (const v of [l1, l3]) {
      await env.until(v.id, 'to be requeued', (j) => j.state === 'queued' && j.attempts === 1);
    }
    await env.running(h.id);
    // Counted by the queue whose job preempted them, and why (issue #43, Kueue's).
    assert.equal((await env.metric(preempted)) - before, 2);

    // The victims' processes really ended, gracefully when they obeyed SIGTERM, by force when not,
    // and their workers were destroyed.
    for (const v of [l1, l3]) {
      const pid = firstPids.get(v.id)!;
      await waitFor(`pid ${pid} of job ${v.id} to be gone`, () => !alive(pid));
      await waitFor(`the first worker of job ${v.id} to be destroyed`, async () => {
        const [w] = await env.workers(v.id);
        return w?.state === 'destroyed';
      });
    }
    assert.ok(env.gotTerm(l1.id), 'l1 got SIGTERM');
    const requeuedAt = async (id: number) =>
      Date.parse((await env.events(id)).find((e) => e.type === 'requeued')!.at);
    // Its stop was asked once h was submitted; only the SIGKILL at the grace period's end (1 s)
    // ends it. Measured from h's submission, not from l1's end: a loaded machine delays l1's exit
    // (which made an earlier form of this check fail), never l3's SIGKILL sooner than its grace.
    const forced = (await requeuedAt(l3.id)) - Date.parse(h.createdAt);
    assert.ok(
      forced >= 1000,
      `l3 ignored SIGTERM, yet was requeued ${forced} ms after h came (grace is 1 s)`,
    );
    // l2 was not touched.
    const survivor = await env.job(l2.id);
    assert.equal(survivor.state, 'running');
    assert.equal(survivor.attempts, 0);
    assert.ok(alive(firstPids.get(l2.id)!));
    assert.ok(!(await env.types(l2.id)).includes('requeued'));

    for (const v of [l1, l3]) {
      const j = await env.job(v.id);
      assert.equal(j.createdAt, v.createdAt, 'a victim keeps its creation time');
      assert.equal(j.borrowed, null);
      assert.match(j.reason, /waiting for quota in queue pq/);
      const ev = await env.events(v.id);
      const requeued = ev.filter((e) => e.type === 'requeued');
      assert.equal(requeued.length, 1);
      assert.match(requeued[0]!.message, new RegExp(`preempted by job ${h.id}\\b`));
      assert.deepEqual(
        ev.map((e) => e.type),
        ['submitted', 'admitted', 'worker-creating', 'started', 'requeued'],
      );
    }
    // The preemptor was admitted only after its victims had given their quota back.
    const hAdmitted = Date.parse((await env.job(h.id)).admittedAt!);
    for (const v of [l1, l3]) {
      const at = await requeuedAt(v.id);
      assert.ok(hAdmitted >= at, `h admitted at ${hAdmitted}, before victim ${v.id} was requeued at ${at}`);
    }

    // Once h is done the victims run again (a new process each) and succeed.
    high.open();
    assert.equal((await env.done(h.id)).state, 'succeeded');
    for (const v of [l1, l3]) {
      const pids = await env.running(v.id, 2);
      assert.equal(pids.length, 2);
      assert.notEqual(pids[1], pids[0]);
    }
    low.open();
    for (const j of lows) assert.equal((await env.done(j.id)).state, 'succeeded');
    for (const v of [l1, l3]) {
      const j = await env.job(v.id);
      assert.equal(j.attempts, 1);
      assert.deepEqual(
        (await env.events(v.id)).map((e) => e.type),
        EVICTED_ONCE_THEN_SUCCEEDED,
      );
      // The eviction is an attempt of its own, charged to no retry budget.
      assert.deepEqual(
        (await env.attempts(v.id)).map((x) => [x.attempt, x.outcome, x.charged]),
        [
          [1, 'requeued', 'none'],
          [2, 'succeeded', null],
        ],
      );
      assert.equal((j as unknown as { retried: number }).retried, 0);
    }
    assert.equal((await env.job(l2.id)).attempts, 0);
    for (const v of [l1, l3]) {
      const ws = await waitFor(`the workers of job ${v.id} to be destroyed`, async () => {
        const list = await env.workers(v.id);
        return list.every((w) => w.state === 'destroyed') ? list : undefined;
      });
      assert.equal(ws.length, 2, 'one worker per run');
    }

    const hold = await env.holdings([...lows, h]);
    assert.ok(peak(hold, 'cpu', inQueue('pq')) <= 4, 'pq above its quota');
  });

  it('keeps the quota its victims free for the preemptor, out of reach of other queues in the cohort', async () => {
    // pw lends its quota to cw; xq has 1 cpu of its own and wants 2 more.
    await env.queue({
      name: 'pw',
      cohort: 'cw',
      quota: { cpu: '4' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    await env.queue({ name: 'xq', cohort: 'cw', quota: { cpu: '1' } });
    const low = env.gate('pw-low');
    const high = env.gate('pw-high');
    const other = env.gate('xq');
    const jobs: Job[] = [];
    try {
      const x1 = await env.blocking('xq', other, { cpu: 1 });
      jobs.push(x1);
      await env.running(x1.id);
      // The same minimal set as above, {l1, l3}; l1 stops at once, l3 only after the grace period.
      const l1 = await env.blocking('pw', low, { cpu: 2, term: 'record' });
      const l2 = await env.blocking('pw', low, { cpu: 1 });
      const l3 = await env.blocking('pw', low, { cpu: 1, term: 'ignore' });
      jobs.push(l1, l2, l3);
      for (const j of [l1, l2, l3]) await env.running(j.id);
      // The cohort is full (5 of 5): x2 must wait.
      const x2 = await env.blocking('xq', other, { cpu: 2 });
      jobs.push(x2);
      await env.barrier();
      assert.equal((await env.job(x2.id)).state, 'queued');

      const h = await env.blocking('pw', high, { cpu: 3, priority: 10 });
      jobs.push(h);
      await env.until(h.id, 'to run', (j) => j.state === 'running', 10_000);
      for (const v of [l1, l3]) assert.equal((await env.job(v.id)).attempts, 1);
      assert.equal((await env.job(l2.id)).attempts, 0);
      assert.equal((await env.job(x2.id)).state, 'queued', 'x2 took the quota freed for h');
    } finally {
      env.openGates();
      for (const j of jobs) await env.done(j.id);
    }
    for (const j of jobs) assert.equal((await env.job(j.id)).state, 'succeeded');
    const hold = await env.holdings(jobs);
    assert.ok(peak(hold, 'cpu') <= 5, 'cohort above the sum of nominals');
  });

  it('preempts nobody when evicting every candidate would not free enough', async () => {
    await env.queue({
      name: 'nq',
      quota: { cpu: '4' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    const lows = env.gate('nq-low');
    const mid = env.gate('nq-mid');
    const high = env.gate('nq-high');
    // Candidates for a priority-3 job: l1 and l2 (2 cpu together); m (priority 5) is not one.
    const l1 = await env.blocking('nq', lows, { cpu: 1 });
    const m = await env.blocking('nq', mid, { cpu: 2, priority: 5 });
    const l2 = await env.blocking('nq', lows, { cpu: 1 });
    const running = [l1, m, l2];
    const pids = new Map<number, number>();
    for (const j of running) pids.set(j.id, (await env.running(j.id))[0]!);

    const h = await env.blocking('nq', high, { cpu: 3, priority: 3 });
    await env.barrier();
    const waiting = await env.job(h.id);
    assert.equal(waiting.state, 'queued');
    assert.match(waiting.reason, /waiting for quota in queue nq: cpu 4\/4 in use, needs 3/);
    for (const j of running) {
      const now = await env.job(j.id);
      assert.equal(now.state, 'running', `job ${j.id}`);
      assert.doesNotMatch(now.reason, /stopping/);
      assert.equal(now.attempts, 0);
      assert.ok(alive(pids.get(j.id)!));
      assert.ok(!(await env.types(j.id)).includes('requeued'));
    }

    // The low ones end first: once m ends too, h fits without preempting anyone. (Ending m first
    // would rightly let h preempt one of them: 2 free + 1 evicted = 3.)
    lows.open();
    for (const j of [l1, l2]) assert.equal((await env.done(j.id)).state, 'succeeded');
    mid.open();
    high.open();
    for (const j of [m, h]) assert.equal((await env.done(j.id)).state, 'succeeded');
    for (const j of running) {
      assert.equal(
        (await env.job(j.id)).attempts,
        0,
        `job ${j.id}: ${JSON.stringify(await env.events(j.id))}`,
      );
    }
    const hold = await env.holdings([...running, h]);
    assert.ok(peak(hold, 'cpu') <= 4, 'nq above its quota');
  });

  it('a victim whose process had already exited 0 on its own succeeds and is not run again', async () => {
    await env.queue({
      name: 'eq',
      quota: { cpu: '2' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    const low = env.gate('eq-low');
    const high = env.gate('eq-high');
    // While l's agent is frozen (SIGSTOP), the server picks l as the victim of h and asks its
    // agent to stop it; then l finishes its work, records it, and exits 0. Thawed, the agent has
    // both to read, the stop first (it came first): the exit, already done, is the outcome.
    const finished = `${env.dir}/finished-eq`;
    const l = await env.submit('eq', {
      script: `${env.recordPid()}; ${low.wait}; echo done > ${finished}-$$; exit 0`,
      requests: { cpu: '2' },
    });
    const jobs: Job[] = [l];
    const host = agentHost();
    try {
      const [pid] = await env.running(l.id);
      process.kill(host, 'SIGSTOP');
      const h = await env.blocking('eq', high, { cpu: 2, priority: 10 });
      jobs.push(h);
      await env.until(l.id, 'to be asked to stop', (j) => /^stopping: preempted by job/.test(j.reason));
      low.open();
      await waitFor(`the process of job ${l.id} to exit`, () => !alive(pid!));
      assert.equal((await env.job(l.id)).state, 'running');
      process.kill(host, 'SIGCONT');
      await env.running(h.id);
      const done = await env.done(l.id);
      assert.equal(done.attempts, 0, `job ${l.id}: ${JSON.stringify(await env.events(l.id))}`);
      assert.equal(done.state, 'succeeded');
      assert.equal(done.exitCode, 0);
      const runs = readdirSync(env.dir).filter((f) => f.startsWith('finished-eq-'));
      assert.equal(runs.length, 1, 'l ran once');
      assert.equal(readFileSync(join(env.dir, runs[0]!), 'utf8'), 'done\n');
    } finally {
      process.kill(host, 'SIGCONT');
      env.openGates();
      for (const j of jobs) await env.done(j.id);
    }
  });

  it('preempts nobody for a job larger than its nominal quota, even when that would make room', async () => {
    // np lends to and borrows from lender; l2 borrows 1 cpu. Evicting l2 would leave room for
    // a 3-cpu job (1 own + 2 from the pool), but 3 cpu is more than np's nominal 2.
    await env.queue({
      name: 'np',
      cohort: 'cnp',
      quota: { cpu: '2' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    await env.queue({ name: 'lender', cohort: 'cnp', quota: { cpu: '2' } });
    const gate = env.gate('np');
    const l1 = await env.blocking('np', gate, { cpu: 1 });
    const l2 = await env.blocking('np', gate, { cpu: 2 });
    for (const j of [l1, l2]) await env.running(j.id);
    assert.deepEqual((await env.job(l2.id)).borrowed, { cpu: '1' });

    const h = await env.blocking('np', gate, { cpu: 3, priority: 10 });
    await env.barrier();
    const waiting = await env.job(h.id);
    assert.equal(waiting.state, 'queued');
    assert.match(waiting.reason, /waiting for cohort cnp to free cpu: needs 3, 1 free/);
    for (const j of [l1, l2]) {
      const now = await env.job(j.id);
      assert.equal(now.state, 'running');
      assert.doesNotMatch(now.reason, /stopping/);
      assert.ok(!(await env.types(j.id)).includes('requeued'));
    }

    gate.open();
    for (const j of [l1, l2, h]) assert.equal((await env.done(j.id)).state, 'succeeded');
    const hb = (await env.events(h.id)).find((e) => e.type === 'admitted');
    // 1 or 2 cpu, depending on which of l1 and l2 ended first.
    assert.match(hb?.message ?? '', /borrowing cpu [12]$/);
    const hold = await env.holdings([l1, l2, h]);
    assert.ok(peak(hold, 'cpu') <= 4, 'cohort above the sum of nominals');
  });
});
