/** `jobCounts` on `GET /projects` and `GET /projects/{name}`: jobs per state, kept as jobs move. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { call, useTestServer } from '../helpers/server.js';
import { submit } from '../helpers/jobs.js';

interface Counted {
  name: string;
  jobCounts: Record<string, number>;
}

const counts = (queued: number, cancelled = 0) => ({
  queued,
  admitted: 0,
  running: 0,
  succeeded: 0,
  failed: 0,
  cancelled,
});

let userToken = '';
const server = useTestServer({}, async () => {
  const s = server();
  const post = async (path: string, body: unknown) => {
    const r = await call<{ token?: string }>(s.api, s.adminToken, 'POST', path, body);
    assert.ok(r.status === 201, `${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  // A held queue admits nothing, so submitted jobs stay queued.
  await post('/cluster-queues', { name: 'held', quota: { cpu: '10' }, stopPolicy: 'Hold' });
  await post('/projects', { name: 'busy', clusterQueue: 'held' });
  await post('/projects', { name: 'idle', clusterQueue: 'held' });
  userToken = (await post('/users', { name: 'viewer-1' })).token!;
  const member = await call(s.api, s.adminToken, 'PUT', '/projects/idle/members/viewer-1', {
    role: 'viewer',
  });
  assert.equal(member.status, 200);
});

describe('job counts', () => {
  it('count every state, zero included, on the list and on one project, and follow a cancel', async () => {
    const s = server();
    const jobs = [];
    for (let i = 0; i < 3; i++) jobs.push(await submit(s.api, s.adminToken, 'busy', { command: ['true'] }));
    const list = async () => (await call<Counted[]>(s.api, s.adminToken, 'GET', '/projects')).body;
    const one = async (name: string) =>
      (
        await call<Counted & { role: string; members: unknown[] }>(
          s.api,
          s.adminToken,
          'GET',
          `/projects/${name}`,
        )
      ).body;

    assert.deepEqual(Object.fromEntries((await list()).map((p) => [p.name, p.jobCounts])), {
      busy: counts(3),
      default: counts(0),
      idle: counts(0),
    });
    const busy = await one('busy');
    assert.deepEqual(busy.jobCounts, counts(3));
    assert.equal(busy.role, 'admin'); // the detail view keeps its other fields
    assert.ok(Array.isArray(busy.members));

    const cancel = await call(s.api, s.adminToken, 'POST', `/jobs/${jobs[0]!.id}/cancel`);
    assert.equal(cancel.status, 200);
    assert.deepEqual((await one('busy')).jobCounts, counts(2, 1));
  });

  it("show a member only its own projects' counts", async () => {
    const s = server();
    const mine = await call<Counted[]>(s.api, userToken, 'GET', '/projects');
    assert.deepEqual(
      mine.body.map((p) => [p.name, p.jobCounts]),
      [['idle', counts(0)]],
    );
    assert.equal((await call(s.api, userToken, 'GET', '/projects/busy')).status, 404);
  });
});
