/** `berth project …` against a real server, as an admin (BERTH_URL/BERTH_TOKEN) and as a member. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ProjectBody } from '../api/fixtures.js';
import { fails, keyValues, ok, parseJson, row, useCliServer } from './cli.js';

interface ProjectJson extends ProjectBody {
  members: { user: string; role: string }[];
  privileges: string[];
}

let carolToken: string;

const ctx = useCliServer(async ({ request }) => {
  carolToken = (await request<{ token: string }>('POST', '/users', { name: 'carol' })).token;
});
const { admin } = ctx;
const carol = (args: string[]) => ctx.as(carolToken)(args);

describe('project create', () => {
  it('creates a project with description and tags; -o json is the API object', async () => {
    const p = parseJson<ProjectJson>(
      await admin([
        'project',
        'create',
        'vision',
        '--queue',
        'default',
        '--description',
        'image models',
        '--tag',
        'gpu',
        '--tag',
        'a100,big',
        '-o',
        'json',
      ]),
    );
    assert.deepEqual(
      {
        name: p.name,
        description: p.description,
        tags: p.tags,
        clusterQueue: p.clusterQueue,
        active: p.active,
      },
      {
        name: 'vision',
        description: 'image models',
        tags: ['gpu', 'a100', 'big'],
        clusterQueue: 'default',
        active: true,
      },
    );
  });

  it('needs --queue: a usage error', async () => {
    fails(
      await admin(['project', 'create', 'x']),
      2,
      /^berth: required option '--queue <queue>' not specified\n$/,
    );
  });

  it("refuses a queue that does not exist, with the API's message", async () => {
    fails(
      await admin(['project', 'create', 'x', '--queue', 'nope']),
      1,
      /^berth: cluster queue "nope" does not exist \(see: berth queue list\)\n$/,
    );
  });

  it('refuses a duplicate and a bad name', async () => {
    fails(
      await admin(['project', 'create', 'vision', '--queue', 'default']),
      1,
      /project "vision" already exists/,
    );
    fails(
      await admin(['project', 'create', 'Bad_Name', '--queue', 'default']),
      1,
      /project name "Bad_Name" must be a DNS label/,
    );
  });

  it('is for admins only', async () => {
    fails(
      await carol(['project', 'create', 'mine', '--queue', 'default']),
      1,
      /^berth: only admins can create projects\n$/,
    );
  });
});

describe('project list and show', () => {
  it('lists projects in a table, marking the current one', async () => {
    const out = ok(await admin(['project', 'list', '--project', 'vision']));
    assert.deepEqual(out.split('\n')[0]?.split(/ +/), ['CURRENT', 'NAME', 'QUEUE', 'TAGS', 'ACTIVE']);
    assert.deepEqual(row(out, 'NAME', 'vision'), {
      CURRENT: '*',
      NAME: 'vision',
      QUEUE: 'default',
      TAGS: 'gpu,a100,big',
      ACTIVE: 'yes',
    });
    assert.deepEqual(row(out, 'NAME', 'default'), {
      CURRENT: '',
      NAME: 'default',
      QUEUE: 'default',
      TAGS: '-',
      ACTIVE: 'yes',
    });
  });

  it('lists as JSON', async () => {
    const list = parseJson<ProjectJson[]>(await admin(['project', 'list', '-o', 'json']));
    assert.deepEqual(list.map((p) => p.name).sort(), ['default', 'vision']);
  });

  it('shows a project as key: value lines, the current one by default', async () => {
    const shown = keyValues(ok(await admin(['project', 'show', 'vision'])));
    assert.equal(shown.name, 'vision');
    assert.equal(shown.description, 'image models');
    assert.equal(shown.queue, 'default');
    assert.equal(shown.tags, 'gpu, a100, big');
    assert.equal(shown['your role'], 'admin');
    assert.equal(keyValues(ok(await admin(['project', 'show']))).name, 'default  (current)');
  });

  it('rejects an unknown output format as a usage error', async () => {
    fails(
      await admin(['project', 'list', '-o', 'yaml']),
      2,
      /argument 'yaml' is invalid\. Allowed choices are table, json\./,
    );
  });

  it('hides projects a user is not a member of', async () => {
    assert.match(ok(await carol(['project', 'list'])), /^no projects visible to you/);
    fails(await carol(['project', 'show', 'vision']), 1, /^berth: project "vision" not found\n$/);
  });
});

describe('project members and privileges', () => {
  it('adds a member with the default role, then changes it', async () => {
    assert.equal(
      ok(await admin(['project', 'member', 'add', 'vision', 'carol'])),
      'carol is now member of project vision\n',
    );
    assert.deepEqual(
      parseJson<ProjectJson>(
        await admin(['project', 'member', 'add', 'vision', 'carol', '--role', 'owner', '-o', 'json']),
      ).members,
      [{ user: 'carol', role: 'owner' }],
    );
    assert.equal(row(ok(await carol(['project', 'list'])), 'NAME', 'vision').QUEUE, 'default');
  });

  it('rejects an unknown role and an unknown user', async () => {
    fails(
      await admin(['project', 'member', 'add', 'vision', 'carol', '--role', 'boss']),
      2,
      /Allowed choices are viewer, member, owner/,
    );
    fails(
      await admin(['project', 'member', 'add', 'vision', 'nobody']),
      1,
      /^berth: user "nobody" not found\n$/,
    );
  });

  it('grants and revokes privileges (admin only)', async () => {
    ok(await admin(['project', 'grant', 'vision', 'target.gpu']));
    const shown = ok(await admin(['project', 'show', 'vision']));
    assert.match(shown, /^privileges:\n {2}target\.gpu$/m);
    assert.match(shown, /^members:\n {2}carol \(owner\)$/m);
    fails(
      await carol(['project', 'grant', 'vision', 'target.big']),
      1,
      /^berth: only admins can grant privileges\n$/,
    );
    ok(await admin(['project', 'revoke', 'vision', 'target.gpu']));
    fails(
      await admin(['project', 'revoke', 'vision', 'target.gpu']),
      1,
      /does not hold privilege "target\.gpu"/,
    );
  });

  it('removes a member', async () => {
    assert.equal(
      ok(await admin(['project', 'member', 'remove', 'vision', 'carol'])),
      'carol removed from project vision\n',
    );
    fails(await carol(['project', 'show', 'vision']), 1, /project "vision" not found/);
  });
});

describe('project update and delete', () => {
  it('changes only the given fields', async () => {
    const p = parseJson<ProjectJson>(
      await admin(['project', 'update', 'vision', '--tag', 'cv', '--inactive', '-o', 'json']),
    );
    assert.deepEqual([p.tags, p.active, p.description], [['cv'], false, 'image models']);
    assert.equal(row(ok(await admin(['project', 'list'])), 'NAME', 'vision').ACTIVE, 'no');
    const q = parseJson<ProjectJson>(
      await admin(['project', 'update', 'vision', '--clear-tags', '--active', '-o', 'json']),
    );
    assert.deepEqual([q.tags, q.active], [[], true]);
  });

  it('moves a project to another queue', async () => {
    ok(await admin(['queue', 'create', 'other', '--quota', 'cpu=1']));
    assert.equal(
      ok(await admin(['project', 'update', 'vision', '--queue', 'other'])),
      'project vision updated\n',
    );
    assert.equal(keyValues(ok(await admin(['project', 'show', 'vision']))).queue, 'other');
  });

  it("sets and clears its maxQueued, and the queue's default for its projects", async () => {
    ok(await admin(['project', 'update', 'vision', '--max-queued', '2']));
    assert.equal(keyValues(ok(await admin(['project', 'show', 'vision'])))['max queued'], '2');
    ok(await admin(['project', 'update', 'vision', '--max-queued', 'none']));
    assert.equal(
      keyValues(ok(await admin(['project', 'show', 'vision'])))['max queued'],
      "the queue's default",
    );
    ok(await admin(['queue', 'update', 'other', '--max-queued-per-project', '50']));
    assert.equal(keyValues(ok(await admin(['queue', 'show', 'other'])))['max queued per project'], '50');
    fails(
      await admin(['project', 'update', 'vision', '--max-queued', '0']),
      2,
      /--max-queued.*at least 1, or none/,
    );
  });

  it('refuses contradictory or empty updates as usage errors', async () => {
    fails(
      await admin(['project', 'update', 'vision', '--active', '--inactive']),
      2,
      /'--active' cannot be used with option '--inactive'/,
    );
    fails(await admin(['project', 'update', 'vision']), 2, /^berth: nothing to update: /);
    fails(
      await admin(['project', 'update', 'vision', '--tag', 'a', '--clear-tags']),
      2,
      /--tag and --clear-tags/,
    );
  });

  it('deletes a project', async () => {
    assert.deepEqual(parseJson(await admin(['project', 'delete', 'vision', '-o', 'json'])), {
      name: 'vision',
      deleted: true,
    });
    fails(await admin(['project', 'show', 'vision']), 1, /^berth: project "vision" not found\n$/);
    fails(await admin(['project', 'delete', 'vision']), 1, /^berth: project "vision" not found\n$/);
  });

  it('refuses to delete a project with unfinished jobs unless told to cancel them', async () => {
    await ctx.request('POST', '/cluster-queues', { name: 'held', quota: { jobs: 1 }, stopPolicy: 'Hold' });
    await ctx.request('POST', '/projects', { name: 'busy', clusterQueue: 'held' });
    const job = await ctx.request<{ id: number }>('POST', '/projects/busy/jobs', { command: ['true'] });
    fails(
      await admin(['project', 'delete', 'busy']),
      1,
      /^berth: project "busy" has 1 unfinished job \(\d+\); cancel them first, or delete with cancelJobs=true \(berth project delete busy --cancel-jobs\)\n$/,
    );
    ok(await admin(['project', 'delete', 'busy', '--cancel-jobs']));
    const after = await ctx.request<{ state: string; reason: string }>('GET', `/jobs/${job.id}`);
    assert.equal(after.state, 'cancelled');
    assert.match(after.reason, /^cancelled by admin, deleting project busy$/);
  });
});
