/**
 * The queueing commands against a real server: `berth priority …`, `submit --priority CLASS`,
 * `queue pending|hold|drain|resume`, `project update --weight`, and what `berth status` says
 * about a waiting job.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { getJob, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  allFail,
  fails,
  keyValues,
  ok,
  parseJson,
  row,
  rows,
  useCliServer,
  SUITE_TIMEOUT_MS,
} from './cli.js';

interface JobJson {
  id: number;
  state: string;
  priority: number;
  priorityClass: string | null;
}

let carolToken: string;

const ctx = useCliServer(async ({ request }) => {
  carolToken = (await request<{ token: string }>('POST', '/users', { name: 'carol' })).token;
  await request('POST', '/cluster-queues', { name: 'lab', quota: { jobs: 10 }, stopPolicy: 'Hold' });
  await request('POST', '/projects', { name: 'mine', clusterQueue: 'lab' });
  await request('POST', '/projects', { name: 'theirs', clusterQueue: 'lab' });
  await request('PUT', '/projects/mine/members/carol', { role: 'owner' });
});
const { admin } = ctx;
const carol = (args: string[]) => ctx.as(carolToken)(args);

async function submitted(project: string, name: string, more: string[] = []): Promise<JobJson> {
  return parseJson<JobJson>(
    await admin(['submit', '--project', project, '--name', name, '-o', 'json', ...more, '--', 'true']),
  );
}

/**
 * A cluster queue `queue` of 1 cpu with project `project`, and a job of that project holding the
 * cpu until the gate file returned exists.
 */
async function holdTheQueue(queue: string, project: string): Promise<string> {
  const { api, adminToken } = ctx.server;
  await call(api, adminToken, 'POST', '/cluster-queues', { name: queue, quota: { cpu: '1' } });
  await call(api, adminToken, 'POST', '/projects', { name: project, clusterQueue: queue });
  const gate = join(ctx.sb.root, `gate-${queue}`);
  const holder = parseJson<JobJson>(
    await admin([
      'submit',
      '--project',
      project,
      '--request',
      'cpu=1',
      '-o',
      'json',
      '--script',
      `while [ ! -e ${gate} ]; do sleep 0.05; done`,
    ]),
  );
  await waitFor(
    'the holder to run',
    async () => (await getJob(api, adminToken, holder.id)).state === 'running',
  );
  return gate;
}

describe('berth priority', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('creates classes, lists them highest first, and deletes them', async () => {
    assert.equal(
      ok(await admin(['priority', 'create', 'high', '--value', '1000', '--description', 'deadlines'])),
      'priority class high created with value 1000\n',
    );
    const batch = parseJson<{ name: string; value: number; description: string }>(
      await admin(['priority', 'create', 'batch', '--value', '-100', '-o', 'json']),
    );
    assert.deepEqual([batch.name, batch.value, batch.description], ['batch', -100, '']);

    const out = ok(await carol(['priority', 'list']));
    assert.deepEqual(
      rows(out).map((r) => r[0]),
      ['NAME', 'high', 'batch'],
    );
    assert.deepEqual(row(out, 'NAME', 'high'), { NAME: 'high', VALUE: '1000', DESCRIPTION: 'deadlines' });
    assert.deepEqual(row(out, 'NAME', 'batch'), { NAME: 'batch', VALUE: '-100', DESCRIPTION: '-' });

    assert.equal(ok(await admin(['priority', 'delete', 'batch'])), 'priority class batch deleted\n');
    const left = parseJson<{ name: string }[]>(await admin(['priority', 'list', '-o', 'json']));
    assert.deepEqual(
      left.map((c) => c.name),
      ['high'],
    );
  });

  it('refuses non-admins, bad values and duplicates in one line', async () => {
    await allFail([
      [
        carol(['priority', 'create', 'mine', '--value', '1']),
        1,
        /^berth: only admins can create priority classes\n$/,
      ],
      [carol(['priority', 'delete', 'high']), 1, /only admins can delete priority classes/],
      [
        admin(['priority', 'create', 'half', '--value', '1.5']),
        2,
        /'1\.5' is invalid\. must be a whole number/,
      ],
      [admin(['priority', 'create', 'novalue']), 2, /required option '--value <n>' not specified/],
      [admin(['priority', 'create', 'High', '--value', '1']), 1, /must be a DNS label/],
      [admin(['priority', 'create', 'high', '--value', '5']), 1, /priority class "high" already exists/],
      [admin(['priority', 'delete', 'nope']), 1, /priority class "nope" not found/],
    ]);
  });

  it('submit --priority takes a class name or a number; status shows both', async () => {
    const high = await submitted('theirs', 'urgent', ['--priority', 'high']);
    assert.deepEqual([high.priority, high.priorityClass], [1000, 'high']);
    const plain = await submitted('theirs', 'plain', ['--priority', '-5']);
    assert.deepEqual([plain.priority, plain.priorityClass], [-5, null]);
    assert.equal(keyValues(ok(await admin(['status', String(high.id)]))).priority, '1000 (high)');
    assert.equal(keyValues(ok(await admin(['status', String(plain.id)]))).priority, '-5');
    fails(
      await admin(['submit', '--project', 'theirs', '--priority', 'hihg', '--', 'true']),
      1,
      /^berth: unknown priority class "hihg" \(known: high \(1000\)\)\n$/,
    );
    await admin(['cancel', String(high.id), String(plain.id)]);
  });
});

describe('berth queue hold, drain, resume', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('sets the stop policy and says what it means', async () => {
    await call(ctx.server.api, ctx.server.adminToken, 'POST', '/cluster-queues', {
      name: 'toggle',
      quota: { jobs: 1 },
    });
    assert.equal(
      ok(await admin(['queue', 'hold', 'toggle'])),
      'cluster queue toggle: stop policy Hold (admits no new jobs; admitted and running jobs carry on)\n',
    );
    const drained = parseJson<{ stopPolicy: string }>(
      await admin(['queue', 'drain', 'toggle', '-o', 'json']),
    );
    assert.equal(drained.stopPolicy, 'HoldAndDrain');
    assert.equal(keyValues(ok(await admin(['queue', 'show', 'toggle'])))['stop policy'], 'HoldAndDrain');
    assert.equal(
      ok(await admin(['queue', 'resume', 'toggle'])),
      'cluster queue toggle: stop policy None (admitting jobs again)\n',
    );
    assert.equal(keyValues(ok(await admin(['queue', 'show', 'toggle'])))['stop policy'], 'None');
  });

  it('is for admins, on queues that exist', async () => {
    await allFail([
      [carol(['queue', 'hold', 'toggle']), 1, /^berth: only admins can change cluster queues\n$/],
      [admin(['queue', 'drain', 'nope']), 1, /cluster queue "nope" not found/],
      [admin(['queue', 'resume']), 2, /missing required argument 'name'/],
    ]);
    assert.equal(keyValues(ok(await admin(['queue', 'show', 'toggle'])))['stop policy'], 'None');
  });
});

describe('berth queue pending and berth status of a waiting job', { timeout: SUITE_TIMEOUT_MS }, () => {
  let jobs: JobJson[];

  before(async () => {
    // lab is held: everything stays pending, in a known order.
    jobs = [
      await submitted('mine', 'm1'),
      await submitted('theirs', 't1'),
      await submitted('mine', 'm2'),
      await submitted('theirs', 't2'),
    ];
  });

  it('lists the queue in admission order', async () => {
    const out = ok(await admin(['queue', 'pending', 'lab']));
    assert.deepEqual(rows(out)[0], ['POSITION', 'ID', 'PROJECT', 'NAME', 'PRIORITY', 'AGE', 'EST. START']);
    assert.deepEqual(
      rows(out)
        .slice(1)
        .map((r) => r.slice(0, 5)),
      jobs.map((j, i) => [
        String(i + 1),
        String(j.id),
        i % 2 === 0 ? 'mine' : 'theirs',
        ['m1', 't1', 'm2', 't2'][i],
        '0',
      ]),
    );
    assert.match(row(out, 'NAME', 'm1').AGE ?? '', /^\d+s$/);
  });

  it('hides the jobs of projects the caller is not in, keeping their places', async () => {
    const out = ok(await carol(['queue', 'pending', 'lab']));
    assert.deepEqual(
      rows(out)
        .slice(1)
        .map((r) => r.slice(0, 4)),
      [
        ['1', String(jobs[0]!.id), 'mine', 'm1'],
        ['2', '-', '(another project)', '-'],
        ['3', String(jobs[2]!.id), 'mine', 'm2'],
        ['4', '-', '(another project)', '-'],
      ],
    );
    const asJson = parseJson<unknown[]>(await carol(['queue', 'pending', 'lab', '-o', 'json']));
    assert.deepEqual(asJson[1], { position: 2, estimatedStartAt: null, hidden: true });
  });

  it('shows a page with --limit and --offset, and says there is more', async () => {
    const r = await admin(['queue', 'pending', 'lab', '--limit', '2', '--offset', '1']);
    assert.equal(r.code, 0);
    assert.deepEqual(
      rows(r.stdout)
        .slice(1)
        .map((c) => c[0]),
      ['2', '3'],
    );
    assert.equal(r.stderr, '(positions 2-3 of 4; --limit and --offset for more)\n');
    assert.equal(
      ok(await admin(['queue', 'pending', 'default'])),
      'no pending jobs in cluster queue default\n',
    );
    await allFail([
      [
        admin(['queue', 'pending', 'lab', '--limit', '0']),
        2,
        /'0' is invalid\. must be a whole number of at least 1/,
      ],
      [admin(['queue', 'pending', 'lab', '--offset', '-1']), 2, /'-1' is invalid/],
      [admin(['queue', 'pending', 'nope']), 1, /cluster queue "nope" not found/],
    ]);
  });

  it('berth status says where a waiting job stands and what holds it', async () => {
    const m2 = jobs[2]!;
    const out = ok(await admin(['status', String(m2.id)]));
    const shown = keyValues(out);
    assert.deepEqual([shown.state, shown.position, shown['position in project']], ['queued', '3', '2']);
    // A held queue admits nothing: no estimate, and why.
    assert.equal(shown['estimated start'], 'none');
    assert.equal(
      shown['how estimated'],
      'not estimated: queue lab is on hold, it admits nothing until resumed',
    );
    assert.match(
      out,
      /\nblocked by:\n {2}queue lab is on hold: it admits nothing until resumed \(berth queue resume lab\)\n/,
    );
  });

  it('names the resource, the queue and the shortfall when quota is short', async () => {
    const gate = await holdTheQueue('tiny', 'small');
    const waiting = await submitted('small', 'waiting', ['--request', 'cpu=500m']);
    // Asked again while the answer says to (a job newer than the last forecast, made under a
    // second ago, or a forecast cut short by its 50 ms on a machine too busy to finish it): what a
    // user reads in "how estimated".
    const out = await waitFor('an estimate of its start', async () => {
      const text = ok(await admin(['status', String(waiting.id)]));
      return keyValues(text)['estimated start'] === 'none' ? undefined : text;
    }).catch((e: unknown) => {
      writeFileSync(gate, '');
      throw e;
    });
    // Nothing like the holder has run in queue tiny, and it has no timeout: it is assumed to run
    // for an hour, and the waiting job to start when it ends.
    const estimate = keyValues(out);
    // In the reader's zone, and how far off (a date too past midnight).
    assert.match(estimate['estimated start'] ?? '', /^(\w{3} \d{1,2} )?\d\d:\d\d \(in (59m\d+s|1h)\)$/);
    assert.equal(
      estimate['how estimated'],
      "an estimate: the scheduler replayed from the queues' order and quota, with expected runtimes of 2 jobs: 2 assumed to run 1h",
    );
    assert.match(
      out,
      /\nblocked by:\n {2}cpu in queue tiny: needs 500m, 0 free \(1 of 1 in use\); short by 500m\n/,
    );
    writeFileSync(gate, '');
    await waitDone(ctx.server.api, ctx.server.adminToken, waiting.id);
    // Not waiting any more: no project position, no blockers.
    const done = keyValues(ok(await admin(['status', String(waiting.id)])));
    assert.equal(done.state, 'succeeded');
    assert.ok(!('blocked by' in done) && !('position in project' in done));
  });
});

describe('a submission and its status tell one story (issue #45)', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('berth submit says what berth status says next: a second reservation, at a local time', async () => {
    ok(
      await admin([
        'queue',
        'create',
        'bfq',
        '--quota',
        'cpu=2',
        '--strategy',
        'Backfill',
        '--reservations',
        '2',
      ]),
    );
    ok(await admin(['project', 'create', 'bfp', '--queue', 'bfq']));
    const gate = join(ctx.sb.root, 'gate-bfq');
    const holder = parseJson<JobJson>(
      await admin([
        'submit',
        '--project',
        'bfp',
        '--request',
        'cpu=1',
        '--timeout',
        '10m',
        '-o',
        'json',
        '--script',
        `while [ ! -e ${gate} ]; do sleep 0.05; done`,
      ]),
    );
    try {
      await waitFor(
        'the holder to run',
        async () => (await getJob(ctx.server.api, ctx.server.adminToken, holder.id)).state === 'running',
      );
      // Needs both cpu: the first reservation, when the holder's 10 minutes are up.
      await submitted('bfp', 'wide', ['--request', 'cpu=2', '--timeout', '1m']);
      // Needs both too: the second reservation, after the wide job's minute. Said at once.
      const said = ok(
        await admin(['submit', '--project', 'bfp', '--request', 'cpu=2', '--timeout', '1h', '--', 'true']),
      );
      const id = Number(/^submitted job (\d+) /.exec(said)?.[1]);
      const told = /^submitted job \d+ \(queued: (.*)\)\n$/.exec(said)?.[1] ?? assert.fail(said);
      assert.match(
        told,
        /^reserved to start at \S*\s?\d\d:\d\d \(in 1[01]m\d*s?\): cpu 2 of queue bfq, .*; position 2$/,
      );
      assert.doesNotMatch(told, /\d{4}-\d\d-\d\dT|provisional/);
      const status = keyValues(ok(await admin(['status', String(id)])));
      // The relative part ticks between the two; the rest is the same words.
      const still = (text: string) => text.replace(/\(in [^)]*\)/g, '(in …)');
      assert.equal(still(status.reason ?? ''), still(told));
      // -o json keeps the instant, in the text and beside it.
      const view = parseJson<{ reason: string; reasonTimes: string[]; provisional: boolean }>(
        await admin(['status', String(id), '-o', 'json']),
      );
      assert.equal(view.provisional, false);
      assert.equal(view.reasonTimes.length, 1);
      assert.ok(view.reason.includes(`reserved to start at ${view.reasonTimes[0]}:`), view.reason);
    } finally {
      writeFileSync(gate, '');
    }
  });
});

describe('berth simulate --from-server', { timeout: SUITE_TIMEOUT_MS }, () => {
  interface Report {
    at: number;
    jobs: { id: number; project: string; queue: string; now: number | null; changed: number | null }[];
    queues: { queue: string; pending: number; now: { starting: number }; changed: { starting: number } }[];
  }

  it('replays the live queues with a change: more quota, and the waiting jobs start now', async () => {
    const { api, adminToken } = ctx.server;
    const gate = await holdTheQueue('whatif', 'sweep');
    const waiting = [
      await submitted('sweep', 'w1', ['--request', 'cpu=1']),
      await submitted('sweep', 'w2', ['--request', 'cpu=1']),
    ];
    try {
      const report = parseJson<Report>(
        await admin(['simulate', '--from-server', '--quota', 'whatif:cpu=3', '-o', 'json']),
      );
      const mine = report.jobs.filter((j) => j.queue === 'whatif');
      assert.deepEqual(
        mine.map((j) => j.id),
        waiting.map((j) => j.id),
      );
      for (const j of mine) {
        // As things are, behind a holder assumed to run an hour; with 3 cpu, at once.
        assert.ok(j.now !== null && j.now - report.at > 30 * 60_000, `job ${j.id} starts at ${j.now}`);
        assert.equal(j.changed, report.at);
      }
      const table = ok(await admin(['simulate', '--from-server', '--quota', 'whatif:cpu=3']));
      assert.match(table, /^what if quota whatif:cpu=3: \d+ pending jobs replayed/);
      assert.match(table, /\n2 of \d+ jobs would start at another time/);
      // Carol is no member of sweep: its name is not shown to her.
      const hers = parseJson<Report>(await carol(['simulate', '--from-server', '-o', 'json']));
      const projects = new Set(hers.jobs.filter((j) => j.queue === 'whatif').map((j) => j.project));
      assert.deepEqual([...projects], ['~1']);
      await allFail([
        [
          admin(['simulate', '--from-server', '--quota', 'nope:cpu=3']),
          1,
          /--quota: no cluster queue named "nope"/,
        ],
        [admin(['simulate', '--from-server', '--quota', 'whatif:cpu=lots']), 1, /is not a quantity/],
      ]);
    } finally {
      writeFileSync(gate, '');
    }
    for (const j of waiting) await waitDone(api, adminToken, j.id);
  });
});

describe('berth project --weight', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('lets an admin set the weight, shown by project show', async () => {
    assert.equal(keyValues(ok(await admin(['project', 'show', 'mine']))).weight, '1');
    assert.equal(ok(await admin(['project', 'update', 'mine', '--weight', '2.5'])), 'project mine updated\n');
    assert.equal(keyValues(ok(await carol(['project', 'show', 'mine']))).weight, '2.5');
    const created = parseJson<{ weight: number }>(
      await admin(['project', 'create', 'heavy', '--queue', 'lab', '--weight', '3', '-o', 'json']),
    );
    assert.equal(created.weight, 3);
  });

  it('refuses owners and values that are not positive numbers', async () => {
    await allFail([
      [
        carol(['project', 'update', 'mine', '--weight', '4']),
        1,
        /^berth: only admins can change a project's fair-share weight\n$/,
      ],
      [
        admin(['project', 'update', 'mine', '--weight', '0']),
        2,
        /'0' is invalid\. must be a number greater than 0/,
      ],
      [admin(['project', 'update', 'mine', '--weight', 'much']), 2, /'much' is invalid/],
    ]);
    assert.equal(keyValues(ok(await carol(['project', 'show', 'mine']))).weight, '2.5');
    // The owner's other changes still go through.
    assert.equal(
      ok(await carol(['project', 'update', 'mine', '--description', 'ours'])),
      'project mine updated\n',
    );
  });
});
