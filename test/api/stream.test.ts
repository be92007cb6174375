/**
 * `GET /api/v1/stream`, the dashboard's one push stream, against a real server running real
 * jobs: hello, job notices, figures as usage changes, a job's log live and its end; what a
 * caller who is not a member never sees; and a server that closes with streams open.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { StreamOutbox, type JobNotice } from '../../src/api/stream-outbox.js';
import { ChangeFeed, type ChangeNotice } from '../../src/service/live/change-feed.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, useTestServer } from '../helpers/server.js';
import { Stream } from '../helpers/sse.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

interface Figures {
  clusterQueues: { name: string; admitted: number; running: number; usage: Record<string, string> }[];
  factories: { name: string; capacity: number; inUse: number }[];
  resourceTypes: unknown[];
}

let scratch: string;
const server = useTestServer({ config: localFactoryConfig(4) }, async () => {
  const s = server();
  const post = async (path: string, body: unknown) => {
    const r = await call<{ token?: string }>(s.api, s.adminToken, 'POST', path, body);
    assert.equal(r.status, 201, `${path}: ${r.text}`);
    return r.body;
  };
  await post('/projects', { name: 'other', clusterQueue: 'default' });
  outsider = (await post('/users', { name: 'outsider' })).token!;
  const member = await call(s.api, s.adminToken, 'PUT', '/projects/other/members/outsider', {
    role: 'member',
  });
  assert.equal(member.status, 200);
});
let outsider = '';
const streams: Stream[] = [];
const open = async (token: string, query = '') => {
  const s = await Stream.open(server().api, token, query);
  streams.push(s);
  return s;
};

before(() => {
  scratch = scratchDir('berth-stream-');
});
after(() => {
  for (const s of streams) s.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** A job that prints `first`, waits for its gate file, prints `second` and exits 0. */
async function gatedJob(project: string, token: string, name: string) {
  const gate = join(scratch, `gate-${name}`);
  const job = await submit(server().api, token, project, {
    script: `echo first; while [ ! -e ${gate} ]; do sleep 0.05; done; echo second`,
  });
  return { job, open: () => writeFileSync(gate, '') };
}

describe('the stream', () => {
  it('answers as server-sent events and says hello first, then the figures', async () => {
    const s = await open(server().adminToken);
    assert.equal(s.res.status, 200);
    assert.match(s.res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(s.res.headers.get('cache-control'), 'no-cache');
    assert.equal(s.res.headers.get('x-accel-buffering'), 'no');
    const figures = await s.next<Figures>('figures', 'the first figures');
    assert.deepEqual(s.events[0], { event: 'hello', data: { user: { name: 'admin', admin: true } } });
    assert.deepEqual(
      figures.clusterQueues.map((q) => q.name),
      ['default'],
    );
    assert.deepEqual(
      figures.factories.map((f) => [f.name, f.capacity]),
      [['local', 4]],
    );
    assert.deepEqual(figures.resourceTypes, []);
  });

  it('tells of a job when it is submitted, as its usage shows in the figures, and when it finishes', async () => {
    const s = await open(server().adminToken);
    await s.next('figures', 'the first figures');
    const { job, open: openGate } = await gatedJob('default', server().adminToken, 'notices');
    await s.next<JobNotice>(
      'job',
      'a notice of the new job',
      (n) => n.id === job.id && n.project === 'default',
    );
    const busy = await s.next<Figures>(
      'figures',
      'figures with the job admitted, running, and its worker in use',
      (f) =>
        f.clusterQueues[0]?.admitted === 1 && f.clusterQueues[0].running === 1 && f.factories[0]?.inUse === 1,
    );
    assert.equal(busy.clusterQueues[0]?.usage.jobs, '1');
    openGate();
    await s.next<JobNotice>(
      'job',
      'a notice that the job succeeded',
      (n) => n.id === job.id && n.state === 'succeeded',
    );
    await s.next<JobNotice>(
      'job',
      'a notice that it was cleaned up',
      (n) => n.id === job.id && n.reason === 'cleaned up',
    );
    await s.next<Figures>(
      'figures',
      'figures with the worker freed',
      (f) =>
        f.clusterQueues[0]?.admitted === 0 && f.clusterQueues[0].running === 0 && f.factories[0]?.inUse === 0,
    );
    // Figures go out only when they change.
    const sent = s.of<Figures>('figures').map((f) => JSON.stringify(f));
    assert.ok(
      sent.every((f, i) => i === 0 || f !== sent[i - 1]),
      'the same figures sent twice in a row',
    );
  });

  it("streams a job's log live with job=ID, then log-end once the job has ended", async () => {
    const { job, open: openGate } = await gatedJob('default', server().adminToken, 'log');
    const s = await open(server().adminToken, `?job=${job.id}`);
    const text = () =>
      s
        .of<{ jobId: number; text: string }>('log')
        .map((l) => {
          assert.equal(l.jobId, job.id);
          return l.text;
        })
        .join('');
    await waitFor('the first line, live', () => text() === 'first\n');
    // The job still waits at its gate: the line came while it ran, and the log has not ended.
    assert.equal(
      (await call<{ state: string }>(server().api, server().adminToken, 'GET', `/jobs/${job.id}`)).body.state,
      'running',
    );
    assert.equal(s.of('log-end').length, 0);
    openGate();
    await s.next('log-end', 'the end of the log');
    assert.equal(text(), 'first\nsecond\n');
    // Nothing of the log comes after its end (job notices may: e.g. "cleaned up").
    const logEvents = s.events.filter((e) => e.event === 'log' || e.event === 'log-end');
    assert.deepEqual(logEvents.at(-1), { event: 'log-end', data: { jobId: job.id } });
  });

  it('sends the whole log and its end at once for a job that has already finished', async () => {
    const job = await submit(server().api, server().adminToken, 'default', { script: 'echo done' });
    await waitDone(server().api, server().adminToken, job.id);
    const s = await open(server().adminToken, `?job=${job.id}`);
    await s.next('log-end', 'the end of the log');
    assert.deepEqual(s.of('log'), [{ jobId: job.id, text: 'done\n' }]);
  });

  it("never tells a caller of another project's jobs, nor streams their logs", async () => {
    const mine = await open(outsider);
    await mine.next('figures', 'the first figures');
    assert.deepEqual(mine.events[0]?.data, { user: { name: 'outsider', admin: false } });
    const hidden = await submit(server().api, server().adminToken, 'default', { script: 'true' });
    const own = await submit(server().api, outsider, 'other', { script: 'true' });
    await waitDone(server().api, server().adminToken, hidden.id);
    await waitDone(server().api, outsider, own.id);
    // Notices go out in order, so once the last notice of its own job has come, any of the
    // hidden job (all published before) would have too.
    await mine.next<JobNotice>(
      'job',
      'the cleanup of its own job',
      (n) => n.id === own.id && n.reason === 'cleaned up',
    );
    assert.deepEqual([...new Set(mine.of<JobNotice>('job').map((n) => n.project))], ['other']);
    const log = await call(server().api, outsider, 'GET', `/stream?job=${hidden.id}`);
    assert.equal(log.status, 404);
    assert.deepEqual(log.body, { error: { code: 'not_found', message: `job ${hidden.id} not found` } });
  });

  it('shows a new member the jobs of the project it joined', async () => {
    const s = await open(outsider);
    await s.next('figures', 'the first figures');
    const put = await call(server().api, server().adminToken, 'PUT', '/projects/default/members/outsider', {
      role: 'viewer',
    });
    assert.equal(put.status, 200);
    const job = await submit(server().api, server().adminToken, 'default', { script: 'true' });
    await s.next<JobNotice>('job', 'a notice of the job in the project it joined', (n) => n.id === job.id);
    const del = await call(server().api, server().adminToken, 'DELETE', '/projects/default/members/outsider');
    assert.equal(del.status, 200);
  });

  it('ends the streams of a user when the user is deleted', async () => {
    const made = await call<{ token: string }>(server().api, server().adminToken, 'POST', '/users', {
      name: 'leaver',
    });
    assert.equal(made.status, 201);
    const s = await open(made.body.token);
    await s.next('figures', 'the first figures');
    const del = await call(server().api, server().adminToken, 'DELETE', '/users/leaver');
    assert.ok(del.status === 200 || del.status === 204, `delete: ${del.status} ${del.text}`);
    await waitFor('the deleted user’s stream to end', () => s.ended);
  });

  it('refuses callers that are not users, and bad parameters', async () => {
    const api = server().api;
    assert.equal((await call(api, undefined, 'GET', '/stream')).status, 401);
    assert.equal((await call(api, server().adminToken, 'GET', '/stream?job=abc')).status, 400);
    assert.equal((await call(api, server().adminToken, 'GET', '/stream?job=999999')).status, 404);
    assert.equal((await call(api, server().adminToken, 'GET', '/stream?x=1')).status, 400);
  });
});

describe('a server with open streams', () => {
  it('closes, ending them itself', async () => {
    // The grace for requests in flight is longer than the bound below, so only the server's own
    // ending of its streams lets close() return in time; how long that takes is no matter.
    const s = await startTestServer({ config: localFactoryConfig(1), requestsGraceMs: 600_000 });
    let closed = false;
    try {
      const a = await Stream.open(s.api, s.adminToken);
      const job = await submit(s.api, s.adminToken, 'default', {
        script: `while [ ! -e ${join(scratch, 'gate-never')} ]; do sleep 0.05; done`,
      });
      // Running when the server closes: a job still being started then may have its start cut
      // off and recorded as failed, and its log would end (seen in CI on a slow machine).
      await waitFor(
        `job ${job.id} to run`,
        async () => (await getJob(s.api, s.adminToken, job.id)).state === 'running',
      );
      const b = await Stream.open(s.api, s.adminToken, `?job=${job.id}`);
      await a.next('figures', 'the first figures');
      await b.next('hello', 'hello');
      let bound: NodeJS.Timeout | undefined;
      const hung = new Promise<'hung'>((resolve) => (bound = setTimeout(() => resolve('hung'), 120_000)));
      const closing = s.close();
      closed = true;
      const outcome = await Promise.race([closing.then(() => 'closed' as const), hung]);
      clearTimeout(bound);
      if (outcome === 'hung') {
        // The client ends the streams, so that close() can end and the test process with it.
        a.close();
        b.close();
        await closing;
      }
      assert.equal(outcome, 'closed', 'close() waited on the open streams');
      await waitFor('both streams to end', () => a.ended && b.ended);
      assert.equal(b.of('log-end').length, 0, 'the log did not end: the job never finished');
    } finally {
      if (!closed) await s.close();
    }
  });
});

describe('what waits for a slow client', () => {
  it('is one notice per job, the newest, and past the limit one per project', () => {
    const box = new StreamOutbox(10);
    const notice = (id: number, project: string, reason = 'r'): JobNotice => ({
      id,
      project,
      state: 'queued',
      reason,
    });
    box.addJob(notice(1, 'a', 'old'));
    box.addJob(notice(2, 'a'));
    box.addJob(notice(1, 'a', 'new'));
    assert.deepEqual(box.take().jobs, [notice(2, 'a'), notice(1, 'a', 'new')]);
    assert.equal(box.empty, true);
    for (let i = 1; i <= 5000; i++) box.addJob(notice(i, ['a', 'b', 'c'][i % 3]!));
    assert.deepEqual(box.take().jobs, [notice(4998, 'a'), notice(4999, 'b'), notice(5000, 'c')]);
  });

  it('is the latest figures only', () => {
    const box = new StreamOutbox();
    box.setFigures('{"n":1}');
    box.setFigures('{"n":2}');
    assert.deepEqual(box.take(), { figures: '{"n":2}', jobs: [] });
    assert.deepEqual(box.take(), { figures: undefined, jobs: [] });
  });
});

describe('the change feed', () => {
  it('calls every subscriber, even after one throws, until it unsubscribes', () => {
    const errors: unknown[] = [];
    const feed = new ChangeFeed((e) => errors.push(e));
    const seen: ChangeNotice[] = [];
    feed.subscribe(() => {
      throw new Error('boom');
    });
    const off = feed.subscribe((n) => seen.push(n));
    feed.publish({ kind: 'queue', name: 'q' });
    off();
    feed.publish({ kind: 'project', name: 'p' });
    assert.deepEqual(seen, [{ kind: 'queue', name: 'q' }]);
    assert.equal(errors.length, 2);
  });
});
