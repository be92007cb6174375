/**
 * What happens to a project's jobs when the project changes under them (issue #17): deleted (its
 * jobs are cancelled only when asked, and never inherited by a new project of the same name),
 * moved to another cluster queue (queued jobs follow; the old queue is not deleted under the
 * jobs that remain), and a privilege revoked (queued jobs that need it wait, naming it).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  assertError,
  assertStatus,
  createProject,
  createQueue,
  createUser,
  useServer,
  type Caller,
} from './fixtures.js';

type Job = JobView & { project: string; clusterQueue: string; blockers?: Record<string, unknown>[] };

const config = [
  localFactoryConfig(4),
  '  gpu: { factory: local, privilege: gpu }',
  'defaultTarget: local',
].join('\n');

const ctx = useServer(undefined, { config });
const { api } = ctx;
const base = () => ctx.server.api;

const sleeper = { command: ['sh', '-c', 'exec sleep 60'] };

async function job(id: number, token = ctx.admin): Promise<Job> {
  return (await getJob(base(), token, id)) as Job;
}

async function waitState(id: number, state: string): Promise<Job> {
  return waitFor(`job ${id} to be ${state}`, async () => {
    const j = await job(id);
    return j.state === state ? j : undefined;
  });
}

async function cancel(api: Caller, id: number): Promise<void> {
  assertStatus(await api(ctx.admin, 'POST', `/jobs/${id}/cancel`), 200, `cancel ${id}`);
}

describe('deleting a project', () => {
  test('with unfinished jobs is refused, naming them; with cancelJobs they are cancelled', async () => {
    await createQueue(api, ctx.admin, 'dq', { quota: { jobs: 1 } });
    await createProject(api, ctx.admin, 'pdel', 'dq');
    const running = await submit(base(), ctx.admin, 'pdel', sleeper);
    const queued = await submit(base(), ctx.admin, 'pdel', { command: ['true'] });
    await waitState(running.id, 'running');

    const refused = await api(ctx.admin, 'DELETE', '/projects/pdel');
    assertError(refused, 409, 'conflict', /2 unfinished jobs .*cancelJobs=true/);
    assertStatus(await api(ctx.admin, 'GET', '/projects/pdel'), 200, 'still there');
    assert.equal((await job(queued.id)).state, 'queued');

    assertStatus(await api(ctx.admin, 'DELETE', '/projects/pdel?cancelJobs=true'), 204);
    for (const id of [running.id, queued.id]) {
      const done = (await waitDone(base(), ctx.admin, id)) as Job;
      assert.equal(done.state, 'cancelled');
      assert.match(done.reason, /^cancelled by admin, deleting project pdel$/);
      // Admins still read (and find) them, filed under the deleted project's archive name.
      assert.match(done.project, /^pdel~deleted-\d+$/);
    }
    assertStatus(await api(ctx.admin, 'GET', '/projects/pdel'), 404);
  });

  test('a new project of the same name starts empty: its members never see the old jobs', async () => {
    const viewer = await createUser(api, ctx.admin, 'pdel-viewer');
    await createProject(api, ctx.admin, 'pdel', 'dq', { 'pdel-viewer': 'viewer' });
    const list = await api<Job[]>(viewer.token, 'GET', '/projects/pdel/jobs');
    assertStatus(list, 200);
    assert.deepEqual(list.body, []);
    const project = await api<{ jobCounts: Record<string, number> }>(viewer.token, 'GET', '/projects/pdel');
    assert.equal(
      Object.values(project.body.jobCounts).reduce((a, b) => a + b, 0),
      0,
    );
    // The old job ids reveal nothing to the new project's members.
    assert.deepEqual((await api<Job[]>(ctx.admin, 'GET', '/projects/pdel/jobs')).body, []);
    assertStatus(await api(viewer.token, 'GET', '/jobs/1'), 404);
    const events = await api<{ type: string }[]>(viewer.token, 'GET', '/jobs/1/events');
    assertStatus(events, 404);
  });
});

describe('moving a project to another cluster queue', () => {
  test('its queued jobs follow; the old queue is not deleted while a job remains on it', async () => {
    await createQueue(api, ctx.admin, 'ma', { quota: { jobs: 1 } });
    await createQueue(api, ctx.admin, 'mb', { quota: { jobs: 4 } });
    await createProject(api, ctx.admin, 'pmv', 'ma');
    const running = await submit(base(), ctx.admin, 'pmv', sleeper);
    await waitState(running.id, 'running');
    const queued = await submit(base(), ctx.admin, 'pmv', { command: ['true'] });
    assert.equal((await job(queued.id)).clusterQueue, 'ma');

    assertStatus(await api(ctx.admin, 'PATCH', '/projects/pmv', { clusterQueue: 'mb' }), 200);
    // It runs on its new queue while the old queue's only slot is still taken.
    const done = (await waitDone(base(), ctx.admin, queued.id)) as Job;
    assert.equal(done.state, 'succeeded');
    assert.equal(done.clusterQueue, 'mb');
    const r = await job(running.id);
    assert.equal(r.state, 'running');
    assert.equal(r.clusterQueue, 'ma', 'a running job finishes where it is');

    assertError(await api(ctx.admin, 'DELETE', '/cluster-queues/ma'), 409, 'conflict', /1 unfinished job/);
    await cancel(api, running.id);
    await waitDone(base(), ctx.admin, running.id);
    assertStatus(await api(ctx.admin, 'DELETE', '/cluster-queues/ma'), 204);
  });
});

describe('revoking a privilege', () => {
  test('a queued job that needs it waits, naming it, without holding its queue; a grant lets it go', async () => {
    await createQueue(api, ctx.admin, 'pq', { quota: { jobs: 1 } });
    await createProject(api, ctx.admin, 'ppriv', 'pq');
    assertStatus(await api(ctx.admin, 'PUT', '/projects/ppriv/privileges/gpu'), 200);
    const blocker = await submit(base(), ctx.admin, 'ppriv', sleeper);
    await waitState(blocker.id, 'running');
    const needy = await submit(base(), ctx.admin, 'ppriv', { target: 'gpu', command: ['true'] });

    assertStatus(await api(ctx.admin, 'DELETE', '/projects/ppriv/privileges/gpu'), 200);
    const parked = await waitFor('the job to name the privilege', async () => {
      const j = await job(needy.id);
      return /privilege gpu/.test(j.reason) ? j : undefined;
    });
    assert.equal(parked.state, 'queued');
    assert.deepEqual(parked.blockers, [{ kind: 'privilege', project: 'ppriv', privilege: 'gpu' }]);

    // The slot frees: a later job without the privilege goes first, the parked one stays queued.
    const later = await submit(base(), ctx.admin, 'ppriv', { command: ['true'] });
    await cancel(api, blocker.id);
    assert.equal((await waitDone(base(), ctx.admin, later.id)).state, 'succeeded');
    assert.equal((await job(needy.id)).state, 'queued');

    assertStatus(await api(ctx.admin, 'PUT', '/projects/ppriv/privileges/gpu'), 200);
    assert.equal((await waitDone(base(), ctx.admin, needy.id)).state, 'succeeded');
  });
});
