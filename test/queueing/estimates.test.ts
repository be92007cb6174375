/**
 * Start-time estimates end to end: real server, real jobs. A waiting job's estimate follows the
 * running job's timeout, then the runtimes the server has seen for jobs like it; the pending list
 * carries the same estimates; a job that has started has none.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { waitFor } from '../helpers/wait.js';
import { Env, type Job } from './support.js';

interface Estimated extends Job {
  startedAt: string | null;
  estimatedStartAt: string | null;
  estimate: string | null;
}

const env = Env.use();

const job = async (id: number) => (await env.job(id)) as Estimated;
const started = (id: number) => waitFor(`job ${id} to run`, async () => (await job(id)).state === 'running');
const ms = (iso: string | null): number => {
  assert.ok(iso !== null, 'an estimate');
  return Date.parse(iso);
};

describe('start-time estimates', () => {
  it('a waiting job starts when the running one’s timeout is up, at the latest', async () => {
    await env.queue({ name: 'est1', quota: { cpu: '1' } });
    const gate = env.gate('est1');
    const holder = await env.submit('est1', {
      script: gate.wait,
      requests: { cpu: '1' },
      timeoutSeconds: 40,
    });
    await started(holder.id);
    const waiting = await env.submit('est1', { command: ['true'], requests: { cpu: '1' } });

    const view = await job(waiting.id);
    const holderStart = ms((await job(holder.id)).startedAt);
    assert.equal(view.state, 'queued');
    // Its timeout, from when it started (the server's clock and the store's agree to the ms).
    assert.ok(Math.abs(ms(view.estimatedStartAt) - (holderStart + 40_000)) < 1_000, view.estimatedStartAt!);
    assert.equal(
      view.estimate,
      "an estimate: the scheduler replayed from the queues' order and quota, with expected runtimes of 2 jobs: 1 from timeouts, 1 assumed to run 1h",
    );
    const pending = await env.req<{ id?: number; estimatedStartAt: string | null }[]>(
      'GET',
      '/cluster-queues/est1/pending',
    );
    assert.equal(pending.body[0]?.id, waiting.id);
    assert.equal(pending.body[0]?.estimatedStartAt, view.estimatedStartAt);

    gate.open();
    await waitFor('the waiting job to start', async () => (await job(waiting.id)).state !== 'queued');
    const started2 = await job(waiting.id);
    assert.equal(started2.estimatedStartAt, null);
    assert.equal(started2.estimate, null);
  });

  it('jobs like one that ran before are expected to take as long as it did', async () => {
    await env.queue({ name: 'est2', quota: { cpu: '1' } });
    const first = await env.submit('est2', { name: 'short', script: 'sleep 1', requests: { cpu: '1' } });
    await waitFor('the first short job to end', async () => (await job(first.id)).state === 'succeeded');
    const done = (await job(first.id)) as Estimated & { finishedAt: string };
    const took = ms(done.finishedAt) - ms(done.startedAt);

    const gate = env.gate('est2');
    const holder = await env.submit('est2', {
      name: 'holder',
      script: gate.wait,
      requests: { cpu: '1' },
      timeoutSeconds: 60,
    });
    await started(holder.id);
    const a = await env.submit('est2', { name: 'short', script: 'sleep 1', requests: { cpu: '1' } });
    const b = await env.submit('est2', { name: 'short', script: 'sleep 1', requests: { cpu: '1' } });
    const [va, vb] = [await job(a.id), await job(b.id)];
    // b follows a by what the first short job took (as the server measured it: within 200 ms of
    // its own record of start and end).
    const gap = ms(vb.estimatedStartAt) - ms(va.estimatedStartAt);
    assert.ok(Math.abs(gap - took) < 200, `gap ${gap} ms, the first run took ${took} ms`);
    assert.match(vb.estimate ?? '', /2 from similar jobs' runtimes, 1 from timeouts$/);
    gate.open();
  });
});
