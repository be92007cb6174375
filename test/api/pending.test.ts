/**
 * A cluster queue's pending list and a waiting job's explanation over the real API, and project
 * fair-share weights: who may set them, and that the scheduler's order follows them, also after a
 * restart.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { startServer } from '../../src/server/run.js';
import { serverDatabase } from '../helpers/store.js';
import { waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import {
  assertError,
  assertStatus,
  createProject,
  createQueue,
  makeWorld,
  useServer,
  type ProjectBody,
  type World,
} from './fixtures.js';

interface Entry {
  position: number;
  estimatedStartAt: string | null;
  id?: number;
  project?: string;
  name?: string;
  priority?: number;
  createdAt?: string;
  hidden?: true;
}

interface JobBody {
  id: number;
  project: string;
  name: string;
  state: string;
  priority: number;
  createdAt: string;
  position: number | null;
  projectPosition: number | null;
  blockers: Record<string, unknown>[];
}

type WeightedProject = ProjectBody & { weight: number };

let world: World;
const ctx = useServer(async () => {
  world = await makeWorld(api, ctx.admin, 'default');
});
const { api } = ctx;

async function submit(project: string, name: string, body: Record<string, unknown> = {}): Promise<JobBody> {
  const res = await api<JobBody>(ctx.admin, 'POST', `/projects/${project}/jobs`, {
    name,
    ...(body.script === undefined ? { command: ['true'] } : {}),
    ...body,
  });
  assertStatus(res, 201, `submit ${name}`);
  return res.body;
}

const pending = (token: string | undefined, queue: string, query = '') =>
  api<Entry[]>(token, 'GET', `/cluster-queues/${queue}/pending${query}`);

const ids = (entries: Entry[]) => entries.map((e) => e.id);

describe('the pending list', () => {
  /** shared (held): alpha has the world's roles, beta no members. */
  let jobs: Record<'a1' | 'b1' | 'a2' | 'b2' | 'b3', JobBody>;

  before(async () => {
    await createQueue(api, ctx.admin, 'shared', { quota: { jobs: 10 }, stopPolicy: 'Hold' });
    await createProject(api, ctx.admin, 'alpha', 'shared', world.roles);
    await createProject(api, ctx.admin, 'beta', 'shared');
    const a1 = await submit('alpha', 'a1');
    const b1 = await submit('beta', 'b1');
    const a2 = await submit('alpha', 'a2');
    const b2 = await submit('beta', 'b2');
    const b3 = await submit('beta', 'b3', { priority: 5 });
    jobs = { a1, b1, a2, b2, b3 };
  });

  test('lists jobs in admission order with their details for an admin', async () => {
    const res = await pending(ctx.admin, 'shared');
    assertStatus(res, 200);
    // b3 by priority; then, at equal shares, alternating projects in creation order.
    const order = [jobs.b3, jobs.a1, jobs.b1, jobs.a2, jobs.b2];
    assert.deepEqual(
      res.body,
      order.map((j, i) => ({
        position: i + 1,
        // The queue is held: it admits nothing, so no start is forecast.
        estimatedStartAt: null,
        id: j.id,
        project: j.project,
        name: j.name,
        priority: j.priority,
        createdAt: j.createdAt,
      })),
    );
    const queue = await api<{ pending: number }>(ctx.admin, 'GET', '/cluster-queues/shared');
    assert.equal(queue.body.pending, 5);
  });

  test('counts jobs of projects the caller cannot see, without saying anything about them', async () => {
    for (const actor of ['owner', 'member', 'viewer'] as const) {
      const res = await pending(world.tokens[actor], 'shared');
      assertStatus(res, 200, actor);
      assert.deepEqual(
        res.body,
        [
          { position: 1, estimatedStartAt: null, hidden: true },
          {
            position: 2,
            estimatedStartAt: null,
            id: jobs.a1.id,
            project: 'alpha',
            name: 'a1',
            priority: 0,
            createdAt: jobs.a1.createdAt,
          },
          { position: 3, estimatedStartAt: null, hidden: true },
          {
            position: 4,
            estimatedStartAt: null,
            id: jobs.a2.id,
            project: 'alpha',
            name: 'a2',
            priority: 0,
            createdAt: jobs.a2.createdAt,
          },
          { position: 5, estimatedStartAt: null, hidden: true },
        ],
        actor,
      );
    }
    const outsider = await pending(world.tokens.outsider, 'shared');
    assertStatus(outsider, 200);
    assert.deepEqual(
      outsider.body,
      [1, 2, 3, 4, 5].map((position) => ({ position, estimatedStartAt: null, hidden: true })),
    );
  });

  test('pages with offset and limit, positions counting from the start', async () => {
    const page = await pending(ctx.admin, 'shared', '?offset=1&limit=2');
    assertStatus(page, 200);
    assert.deepEqual(
      page.body.map((e) => [e.position, e.id]),
      [
        [2, jobs.a1.id],
        [3, jobs.b1.id],
      ],
    );
    const member = await pending(world.tokens.member, 'shared', '?offset=2&limit=10');
    assert.deepEqual(member.body[0], { position: 3, estimatedStartAt: null, hidden: true });
    assert.deepEqual(ids(member.body), [undefined, jobs.a2.id, undefined]);
    assert.deepEqual((await pending(ctx.admin, 'shared', '?offset=5')).body, []);
    assert.deepEqual((await pending(ctx.admin, 'default')).body, []);
  });

  test('refuses bad queries, unknown queues and missing tokens', async () => {
    for (const query of ['?limit=0', '?limit=1001', '?offset=-1', '?offset=abc', '?limit=1.5', '?sort=id']) {
      assertError(await pending(ctx.admin, 'shared', query), 400, 'bad_request', undefined, query);
    }
    assertError(await pending(ctx.admin, 'nope'), 404, 'not_found', /cluster queue "nope" not found/);
    assertError(await pending(world.tokens.outsider, 'nope'), 404, 'not_found');
    assertError(await pending(undefined, 'shared'), 401, 'unauthorized');
  });

  test('a waiting job shows its positions and what blocks it', async () => {
    const a2 = (await api<JobBody>(world.tokens.viewer, 'GET', `/jobs/${jobs.a2.id}`)).body;
    assert.equal(a2.state, 'queued');
    assert.equal(a2.position, 4);
    assert.equal(a2.projectPosition, 2);
    assert.deepEqual(a2.blockers, [{ kind: 'hold', queue: 'shared', stopPolicy: 'Hold' }]);
    const b3 = (await api<JobBody>(ctx.admin, 'GET', `/jobs/${jobs.b3.id}`)).body;
    assert.equal(b3.position, 1);
    assert.equal(b3.projectPosition, 1);
  });

  test('after resuming, the list empties and finished jobs have no positions or blockers', async () => {
    assertStatus(await api(ctx.admin, 'PATCH', '/cluster-queues/shared', { stopPolicy: 'None' }), 200);
    for (const j of Object.values(jobs)) await waitDone(ctx.server.api, ctx.admin, j.id);
    assert.deepEqual((await pending(ctx.admin, 'shared')).body, []);
    const done = (await api<JobBody>(ctx.admin, 'GET', `/jobs/${jobs.a2.id}`)).body;
    assert.equal(done.state, 'succeeded');
    assert.equal(done.position, null);
    assert.equal(done.projectPosition, null);
    assert.deepEqual(done.blockers, []);
  });

  test('a job short of quota names the resource, the queue and the amounts', async () => {
    await createQueue(api, ctx.admin, 'small', { quota: { cpu: '1' } });
    await createProject(api, ctx.admin, 'tight', 'small');
    // Where the job can see it: its namespaces hide the rest of /tmp, the data directory's too.
    const gate = join(scratchDir('berth-pending-'), 'gate-small');
    const holder = await submit('tight', 'holder', {
      requests: { cpu: '1' },
      script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    });
    await waitFor('the holder to run', async () => {
      const j = (await api<JobBody>(ctx.admin, 'GET', `/jobs/${holder.id}`)).body;
      return j.state === 'running';
    });
    const waiting = await submit('tight', 'waiting', { requests: { cpu: '500m' } });
    const view = (await api<JobBody>(ctx.admin, 'GET', `/jobs/${waiting.id}`)).body;
    assert.equal(view.state, 'queued');
    assert.equal(view.position, 1);
    assert.deepEqual(view.blockers, [
      {
        kind: 'quota',
        queue: 'small',
        resource: 'cpu',
        requested: 500,
        available: 0,
        used: 1000,
        limit: 1000,
      },
    ]);
    writeFileSync(gate, '');
    await waitDone(ctx.server.api, ctx.admin, holder.id);
    await waitDone(ctx.server.api, ctx.admin, waiting.id);
  });
});

describe('project weights', () => {
  test('default to 1, are shown in every project view, and only admins change them', async () => {
    await world.project('weighted');
    const created = await api<WeightedProject>(ctx.admin, 'GET', '/projects/weighted');
    assert.equal(created.body.weight, 1);

    const res = await api<WeightedProject>(ctx.admin, 'PATCH', '/projects/weighted', { weight: 2.5 });
    assertStatus(res, 200);
    assert.equal(res.body.weight, 2.5);
    for (const actor of ['owner', 'member', 'viewer'] as const) {
      const shown = await api<WeightedProject>(world.tokens[actor], 'GET', '/projects/weighted');
      assert.equal(shown.body.weight, 2.5, actor);
      const list = await api<WeightedProject[]>(world.tokens[actor], 'GET', '/projects');
      assert.equal(list.body.find((p) => p.name === 'weighted')?.weight, 2.5, actor);
    }

    assertError(
      await api(world.tokens.owner, 'PATCH', '/projects/weighted', { weight: 3 }),
      403,
      'forbidden',
      /only admins can change a project's fair-share weight/,
    );
    assertError(
      await api(world.tokens.member, 'PATCH', '/projects/weighted', { weight: 3 }),
      403,
      'forbidden',
    );
    assertError(
      await api(world.tokens.outsider, 'PATCH', '/projects/weighted', { weight: 3 }),
      404,
      'not_found',
    );
    // An owner may still change what is theirs, with or without restating the weight.
    const own = await api<WeightedProject>(world.tokens.owner, 'PATCH', '/projects/weighted', {
      description: 'mine',
      weight: 2.5,
    });
    assertStatus(own, 200);
    assert.equal(own.body.description, 'mine');
    assert.equal((await api<WeightedProject>(ctx.admin, 'GET', '/projects/weighted')).body.weight, 2.5);
  });

  test('refuses weights that are not positive numbers', async () => {
    for (const weight of [0, -1, '2', null, 1_000_001]) {
      assertError(
        await api(ctx.admin, 'PATCH', '/projects/weighted', { weight }),
        400,
        'bad_request',
        undefined,
        JSON.stringify(weight),
      );
    }
    assert.equal((await api<WeightedProject>(ctx.admin, 'GET', '/projects/weighted')).body.weight, 2.5);
  });

  test('an admin may set the weight at creation', async () => {
    const res = await api<WeightedProject>(ctx.admin, 'POST', '/projects', {
      name: 'heavy',
      clusterQueue: 'default',
      weight: 4,
    });
    assertStatus(res, 201);
    assert.equal(res.body.weight, 4);
  });

  test('the admission order follows the weights at once and after a restart', async () => {
    await createQueue(api, ctx.admin, 'fair', { quota: { jobs: 8 }, stopPolicy: 'Hold' });
    await createProject(api, ctx.admin, 'p-a', 'fair');
    await createProject(api, ctx.admin, 'p-b', 'fair');
    const a: JobBody[] = [];
    const b: JobBody[] = [];
    for (let i = 1; i <= 4; i++) {
      b.push(await submit('p-b', `b${i}`));
      a.push(await submit('p-a', `a${i}`));
    }
    const [a1, a2, a3, a4] = a.map((j) => j.id);
    const [b1, b2, b3, b4] = b.map((j) => j.id);
    assert.deepEqual(ids((await pending(ctx.admin, 'fair')).body), [b1, a1, b2, a2, b3, a3, b4, a4]);

    // Weight 2: p-a's k-th job comes at half the share of p-b's k-th.
    assertStatus(await api(ctx.admin, 'PATCH', '/projects/p-a', { weight: 2 }), 200);
    const weighted = [b1, a1, a2, b2, a3, a4, b3, b4];
    assert.deepEqual(ids((await pending(ctx.admin, 'fair')).body), weighted);

    // The weights come back from the store when the server starts again.
    await ctx.server.server.close();
    const again = await startServer({
      dataDir: ctx.server.dataDir,
      database: (await serverDatabase(ctx.server.dataDir))?.url,
      listen: '127.0.0.1:0',
      configFile: '/dev/null',
      print: () => {},
    });
    try {
      const res = await call<Entry[]>(
        `${again.url}/api/v1`,
        ctx.admin,
        'GET',
        '/cluster-queues/fair/pending',
      );
      assertStatus(res, 200);
      assert.deepEqual(ids(res.body), weighted);
    } finally {
      await again.close();
      rmSync(ctx.server.dataDir, { recursive: true, force: true });
    }
  });
});
