/**
 * `GET /cluster-queues/{name}/history`: the sampler's figures over the real API — samples appear
 * on their own, follow the jobs (usage, nominal, pending, admitted, admissions), and anyone
 * signed in may read them; an unknown queue is a 404 and a bad `minutes` a 400. The ring buffer's
 * bound, and the admissions counter's restarts, are checked on the sampler itself.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { QueueHistoryView } from '../../src/domain/queue-history.js';
import type { QueueStatus, ServiceContext } from '../../src/service/context.js';
import { QueueHistory } from '../../src/service/live/queue-history.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { assertError, assertStatus, createProject, createQueue, createUser, useServer } from './fixtures.js';
import { scratchDir } from '../helpers/scratch.js';

const SAMPLE_SECONDS = 0.1;
const KEEP_SECONDS = 30;

const ctx = useServer(undefined, {
  config: [
    localFactoryConfig(4),
    'queueHistory:',
    `  sampleSeconds: ${SAMPLE_SECONDS}`,
    `  keep: ${KEEP_SECONDS}`,
  ].join('\n'),
});
const { api } = ctx;
const scratch = scratchDir('berth-queue-history-');
after(() => rmSync(scratch, { recursive: true, force: true }));

const history = async (name: string, minutes = 60, token = ctx.admin) => {
  const res = await api<QueueHistoryView>(token, 'GET', `/cluster-queues/${name}/history?minutes=${minutes}`);
  assertStatus(res, 200, `history of ${name}`);
  return res.body;
};

describe('GET /cluster-queues/{name}/history', () => {
  it('records samples on its own, every sampleSeconds', async () => {
    const h = await waitFor('three samples of the default queue', async () => {
      const b = await history('default');
      return b.samples.length >= 3 && b;
    });
    assert.equal(h.queue, 'default');
    assert.equal(h.intervalSeconds, SAMPLE_SECONDS);
    assert.equal(h.keepSeconds, KEEP_SECONDS);
    assert.ok(h.resources.includes('cpu'), `resources: ${h.resources.join(', ')}`);
    const [first, second] = h.samples;
    assert.ok(first && second);
    assert.ok(Date.parse(second.at) > Date.parse(first.at), 'oldest first');
    // The default queue's quota is this machine's CPU count (src/server/bootstrap.ts), in cores.
    assert.ok((first.nominal.cpu ?? 0) >= 1, JSON.stringify(first));
    assert.equal(first.used.cpu, 0);
    assert.equal(first.pending, 0);
  });

  it('follows the jobs: usage in base units, pending, admitted, running and admissions', async () => {
    await createQueue(api, ctx.admin, 'hist', { quota: { cpu: '4', memory: '8Gi', jobs: 2 } });
    await createProject(api, ctx.admin, 'hist', 'hist');
    const gate = join(scratch, 'gate');
    const jobs = [];
    for (let i = 0; i < 3; i++)
      jobs.push(
        await submit(ctx.server.api, ctx.admin, 'hist', {
          script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
          requests: { cpu: '500m', memory: '1Gi' },
        }),
      );
    // Two fit (jobs: 2), one waits.
    const busy = await waitFor('a sample with two jobs running and one pending', async () => {
      const h = await history('hist');
      const last = h.samples.at(-1);
      return last && last.running === 2 && last.pending === 1 && { h, last };
    });
    assert.deepEqual(busy.h.resources, ['cpu', 'jobs', 'memory']);
    assert.equal(busy.last.admitted, 2);
    assert.deepEqual(busy.last.used, { cpu: 1, jobs: 2, memory: 2 * 2 ** 30 });
    assert.deepEqual(busy.last.nominal, { cpu: 4, jobs: 2, memory: 8 * 2 ** 30 });
    assert.deepEqual(busy.last.borrowed, { cpu: 0, jobs: 0, memory: 0 });
    const admitted = (h: QueueHistoryView) => h.samples.reduce((n, s) => n + s.admissions, 0);
    assert.equal(admitted(busy.h), 2, 'two admissions so far');

    writeFileSync(gate, '');
    for (const j of jobs) assert.equal((await waitDone(ctx.server.api, ctx.admin, j.id)).state, 'succeeded');
    const idle = await waitFor('a sample with the queue idle again', async () => {
      const h = await history('hist');
      const last = h.samples.at(-1);
      return last?.admitted === 0 && last.pending === 0 && h;
    });
    assert.equal(admitted(idle), 3, 'three admissions in all');
    assert.deepEqual(idle.samples.at(-1)?.used, { cpu: 0, jobs: 0, memory: 0 });
  });

  it('answers only the last `minutes`', async () => {
    const all = await history('default', 60);
    assert.ok(all.samples.length > 0);
    // Every sample is recent: a window of a minute holds them all, and the answer is oldest first.
    const minute = await history('default', 1);
    assert.ok(minute.samples.length > 0);
    const times = minute.samples.map((s) => Date.parse(s.at));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
    );
    assert.ok(times.every((t) => t >= Date.now() - 60_000 - 1000));
  });

  it('may be read by any signed-in user, not by the anonymous', async () => {
    const user = await createUser(api, ctx.admin, 'hilda');
    assert.ok((await history('default', 60, user.token)).samples.length > 0);
    assertError(await api(undefined, 'GET', '/cluster-queues/default/history'), 401, 'unauthorized');
  });

  it('is a 404 for an unknown queue and a 400 for a bad `minutes`', async () => {
    assertError(
      await api(ctx.admin, 'GET', '/cluster-queues/nope/history'),
      404,
      'not_found',
      /cluster queue "nope" not found/,
    );
    for (const bad of ['0', '-5', 'abc', '1.5', '43201'])
      assertError(
        await api(ctx.admin, 'GET', `/cluster-queues/default/history?minutes=${bad}`),
        400,
        'bad_request',
        /minutes/,
        `minutes=${bad}`,
      );
    assertError(await api(ctx.admin, 'GET', '/cluster-queues/default/history?hours=1'), 400, 'bad_request');
  });

  it('is in the OpenAPI document', async () => {
    const doc = await api<{ paths: Record<string, Record<string, unknown>> }>(
      undefined,
      'GET',
      '/openapi.json',
    );
    assertStatus(doc, 200);
    assert.ok(doc.body.paths['/api/v1/cluster-queues/{name}/history']?.get, 'no GET …/history');
  });
});

describe('a server keeping one second', () => {
  const small = useServer(undefined, { config: 'queueHistory: { sampleSeconds: 0.1, keep: 1 }' });

  it('holds at most keep / sampleSeconds samples, dropping the oldest', async () => {
    const read = async () => {
      const res = await small.api<QueueHistoryView>(small.admin, 'GET', '/cluster-queues/default/history');
      assertStatus(res, 200);
      return res.body;
    };
    const full = await waitFor('ten samples', async () => {
      const h = await read();
      return h.samples.length >= 10 && h;
    });
    const oldest = full.samples[0]?.at;
    const later = await waitFor('the oldest sample to be dropped', async () => {
      const h = await read();
      return h.samples[0]?.at !== oldest && h;
    });
    assert.ok(later.samples.length <= 10, `${later.samples.length} samples`);
    assert.ok(Date.parse(later.samples[0]?.at ?? '') > Date.parse(oldest ?? ''));
  });
});

describe('the sampler', () => {
  /** A sampler over a fake server: one queue whose figures the test sets, and a clock it steers. */
  function fakeServer(capacity: number) {
    let now = 1_700_000_000_000;
    const status: QueueStatus = { usage: {}, borrowed: {}, pending: 0, admitted: 0, running: 0 };
    const models: { name: string; nominal: Record<string, number> }[] = [
      { name: 'q', nominal: { cpu: 2000, memory: 2 ** 30 } },
    ];
    const server = {
      now: () => now,
      queueStatus: () => status,
      runtime: { controller: { queueModels: () => models } },
    } as unknown as ServiceContext;
    const h = new QueueHistory(server, { sampleSeconds: 1, keepSeconds: capacity });
    return {
      h,
      status,
      models,
      sample(advanceMs = 1000) {
        h.sample();
        now += advanceMs;
      },
      now: () => now,
    };
  }

  it('keeps at most keepSeconds / sampleSeconds samples per queue, dropping the oldest', () => {
    const s = fakeServer(10);
    assert.equal(s.h.samplesPerQueue, 10);
    for (let i = 0; i < 25; i++) {
      s.status.pending = i;
      s.sample();
    }
    const v = s.h.view('q', 60);
    assert.equal(v.samples.length, 10);
    assert.deepEqual(
      v.samples.map((x) => x.pending),
      [15, 16, 17, 18, 19, 20, 21, 22, 23, 24],
    );
    // Amounts in base units: cpu in cores.
    assert.deepEqual(v.samples[0]?.nominal, { cpu: 2, memory: 2 ** 30 });
    // A minute's window after a long pause holds nothing.
    s.sample(120_000);
    s.sample();
    assert.equal(s.h.view('q', 1).samples.length, 1);
  });

  it('counts admissions since the sample before, also across a restarted counter', () => {
    const s = fakeServer(100);
    const counts = [undefined, 0, 3, 3, 7, 2, 5];
    for (const c of counts) {
      if (c === undefined) delete s.status.admissions;
      else s.status.admissions = c;
      s.sample();
    }
    // 7 → 2: the controller was replaced, and made 2 since.
    assert.deepEqual(
      s.h.view('q', 60).samples.map((x) => x.admissions),
      [0, 0, 3, 0, 4, 2, 3],
    );
  });

  it('keeps a resource that appears later, and drops a deleted queue', () => {
    const s = fakeServer(100);
    s.sample();
    s.models[0] = { name: 'q', nominal: { cpu: 2000, memory: 2 ** 30, gpu: 1 } };
    s.status.usage = { gpu: 1 };
    s.sample();
    const v = s.h.view('q', 60);
    assert.deepEqual(v.resources, ['cpu', 'gpu', 'memory']);
    assert.deepEqual(v.samples[0]?.used, { cpu: 0, memory: 0 });
    assert.deepEqual(v.samples[1]?.used, { cpu: 0, gpu: 1, memory: 0 });
    s.models.length = 0;
    s.sample();
    assert.deepEqual(s.h.view('q', 60).samples, []);
    // Made again after the first sample: its counter's admissions are all new.
    s.models.push({ name: 'q', nominal: {} });
    s.status.admissions = 4;
    s.sample();
    assert.deepEqual(
      s.h.view('q', 60).samples.map((x) => x.admissions),
      [4],
    );
  });
});
