/**
 * Fair share between the projects of one queue, end to end: a project with a long backlog does
 * not starve one that submits a single job.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Env, peak, type Job } from './support.js';

const env = Env.use();

describe('fair share', () => {
  it("a project's single job runs second, not after the other project's twenty", async () => {
    await env.queue({ name: 'fq', quota: { jobs: '1' } }, ['p1', 'p2']);
    const gate = env.gate('fq');
    const first = await env.blocking('p1', gate);
    const backlog: Job[] = [first];
    for (let i = 1; i < 20; i++) backlog.push(await env.submit('p1', { command: ['true'] }));
    await env.running(first.id);
    const lone = await env.submit('p2', { command: ['true'] });
    const waiting = await env.job(lone.id);
    assert.equal(waiting.state, 'queued');
    assert.equal(waiting.position, 1, 'the scheduler itself says p2 is next');

    gate.open();
    const all = [...backlog, lone];
    for (const j of all) assert.equal((await env.done(j.id)).state, 'succeeded');

    const admissions: { job: number; event: number }[] = [];
    for (const j of all) {
      const e = (await env.events(j.id)).find((x) => x.type === 'admitted');
      assert.ok(e, `job ${j.id} has no admitted event`);
      admissions.push({ job: j.id, event: e.id });
    }
    const order = admissions.sort((a, b) => a.event - b.event).map((a) => a.job);
    assert.equal(order[0], first.id);
    assert.equal(
      order.indexOf(lone.id) + 1,
      2,
      `p2's job was admitted in place ${order.indexOf(lone.id) + 1}`,
    );
    assert.equal(peak(await env.holdings(all), 'jobs'), 1, 'more than one job at once');
  });
});
