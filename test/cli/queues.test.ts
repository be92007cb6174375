/** `berth queue …` against a real server. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { QueueBody } from '../api/fixtures.js';
import { allFail, fails, keyValues, ok, parseJson, row, useCliServer } from './cli.js';

interface QueueJson extends QueueBody {
  admitted: number;
}

let daveToken: string;

const ctx = useCliServer(async ({ request }) => {
  daveToken = (await request<{ token: string }>('POST', '/users', { name: 'dave' })).token;
});
const { admin } = ctx;

describe('queue create', () => {
  it('sends every flag; -o json is the API object', async () => {
    const q = parseJson<QueueJson>(
      await admin([
        'queue',
        'create',
        'research',
        '--quota',
        'cpu=8,memory=32Gi',
        '--quota',
        'jobs=10',
        '--cohort',
        'lab',
        '--borrowing-limit',
        'cpu=2',
        '--lending-limit',
        'memory=8Gi',
        '--strategy',
        'StrictFIFO',
        '--within-queue-preemption',
        'LowerPriority',
        '--reclaim-within-cohort',
        'Any',
        '--borrow-within-cohort',
        'LowerPriority',
        '--max-priority-threshold',
        '-5',
        '--max-queued-per-project',
        '100',
        '--stop-policy',
        'Hold',
        '-o',
        'json',
      ]),
    );
    assert.deepEqual(
      {
        name: q.name,
        quota: q.quota,
        cohort: q.cohort,
        borrowingLimit: q.borrowingLimit,
        lendingLimit: q.lendingLimit,
        queueingStrategy: q.queueingStrategy,
        preemption: q.preemption,
        stopPolicy: q.stopPolicy,
        maxQueuedPerProject: q.maxQueuedPerProject,
      },
      {
        name: 'research',
        quota: { cpu: '8', memory: '32Gi', jobs: '10' },
        cohort: 'lab',
        borrowingLimit: { cpu: '2' },
        lendingLimit: { memory: '8Gi' },
        queueingStrategy: 'StrictFIFO',
        preemption: {
          withinClusterQueue: 'LowerPriority',
          reclaimWithinCohort: 'Any',
          borrowWithinCohort: { policy: 'LowerPriority', maxPriorityThreshold: -5 },
        },
        maxQueuedPerProject: 100,
        stopPolicy: 'Hold',
      },
    );
  });

  it('says what it created', async () => {
    assert.equal(
      ok(await admin(['queue', 'create', 'small', '--quota', 'cpu=500m'])),
      'cluster queue small created with quota cpu=500m\n',
    );
  });

  it('rejects bad quantities and malformed lists before calling the server', async () => {
    await allFail([
      [
        admin(['queue', 'create', 'q', '--quota', 'cpu=abc']),
        2,
        /^berth: option '--quota <quantities>' argument 'cpu=abc' is invalid\. cpu: "abc" is not a quantity/,
      ],
      [admin(['queue', 'create', 'q', '--quota', 'cpu']), 2, /expected RESOURCE=QUANTITY, got "cpu"/],
      [admin(['queue', 'create', 'q', '--quota', 'cpu=1,cpu=2']), 2, /cpu is given twice/],
      [
        admin(['queue', 'create', 'q', '--quota', 'hasOwnProperty=1']),
        2,
        /resource "hasOwnProperty" must be a resource name .*not a name every JavaScript object has/,
      ],
      [
        admin(['queue', 'create', 'q', '--quota', 'bad name=1']),
        2,
        /resource "bad name" must be a resource name/,
      ],
      [admin(['queue', 'create', 'q']), 2, /required option '--quota <quantities>' not specified/],
      [
        admin(['queue', 'create', 'q', '--quota', 'cpu=1', '--strategy', 'Fifo']),
        2,
        /Allowed choices are StrictFIFO, BestEffortFIFO, Backfill/,
      ],
    ]);
    fails(await admin(['queue', 'show', 'q']), 1, /^berth: cluster queue "q" not found\n$/);
  });

  it('passes on what only the server can check', async () => {
    fails(
      await admin(['queue', 'create', 'q', '--quota', 'cpu=1', '--borrowing-limit', 'cpu=1']),
      1,
      /^berth: borrowingLimit\.cpu: a borrowingLimit needs a cohort/,
    );
    fails(
      await admin(['queue', 'create', 'research', '--quota', 'cpu=1']),
      1,
      /^berth: cluster queue "research" already exists\n$/,
    );
  });

  it('is for admins only', async () => {
    fails(
      await ctx.as(daveToken)(['queue', 'create', 'q', '--quota', 'cpu=1']),
      1,
      /^berth: only admins can create cluster queues\n$/,
    );
  });
});

describe('queue list and show', () => {
  it('lists queues in a table', async () => {
    const out = ok(await admin(['queue', 'list']));
    assert.deepEqual(out.split('\n')[0]?.split(/ +/), [
      'NAME',
      'COHORT',
      'QUOTA',
      'USAGE',
      'PENDING',
      'ADMITTED',
    ]);
    assert.deepEqual(row(out, 'NAME', 'research'), {
      NAME: 'research',
      COHORT: 'lab',
      QUOTA: 'cpu=8 memory=32Gi jobs=10',
      USAGE: '-',
      PENDING: '0',
      ADMITTED: '0',
    });
    assert.equal(row(out, 'NAME', 'small').COHORT, '-');
    const names = parseJson<QueueJson[]>(await admin(['queue', 'list', '-o', 'json'])).map((q) => q.name);
    assert.deepEqual(names.sort(), ['default', 'research', 'small']);
  });

  it('shows one queue as key: value lines', async () => {
    const q = keyValues(ok(await admin(['queue', 'show', 'research'])));
    assert.equal(q.quota, 'cpu=8 memory=32Gi jobs=10');
    assert.equal(q['borrowing limit'], 'cpu=2');
    assert.equal(q.strategy, 'StrictFIFO');
    assert.equal(q['stop policy'], 'Hold');
    assert.equal(
      q.preemption,
      'within queue LowerPriority, reclaim within cohort Any, borrow within cohort LowerPriority (priority ≤ -5); interactive jobs never preempted',
    );
    assert.equal(q['max queued per project'], '100');
  });

  it("says whether a queue's interactive jobs may be preempted, and keeps what was set", async () => {
    ok(await admin(['queue', 'create', 'shells', '--quota', 'cpu=2', '--interactive-preemption', 'Allowed']));
    const q = keyValues(ok(await admin(['queue', 'show', 'shells'])));
    assert.match(q.preemption ?? '', /; interactive jobs preempted like any$/);
    const json = parseJson<{ preemption: { interactive?: string } }>(
      await admin(['queue', 'show', 'shells', '-o', 'json']),
    );
    assert.equal(json.preemption.interactive, 'Allowed');
    ok(await admin(['queue', 'delete', 'shells']));
  });
});

describe('queue update and delete', () => {
  it('replaces only the given fields', async () => {
    const q = parseJson<QueueJson>(
      await admin([
        'queue',
        'update',
        'research',
        '--quota',
        'cpu=16,memory=64Gi',
        '--stop-policy',
        'None',
        '-o',
        'json',
      ]),
    );
    assert.deepEqual(
      [q.quota, q.stopPolicy, q.queueingStrategy, q.cohort],
      [{ cpu: '16', memory: '64Gi' }, 'None', 'StrictFIFO', 'lab'],
    );
  });

  it('Backfill with learned estimates, as show says it', async () => {
    ok(await admin(['queue', 'update', 'small', '--strategy', 'Backfill', '--estimates', 'learned']));
    assert.equal(
      keyValues(ok(await admin(['queue', 'show', 'small']))).strategy,
      'Backfill, learned estimates',
    );
    ok(await admin(['queue', 'update', 'small', '--estimates', 'requested']));
    assert.equal(
      keyValues(ok(await admin(['queue', 'show', 'small']))).strategy,
      'Backfill, requested estimates',
    );
  });

  it('Backfill with more than one reservation (--reservations), as show says it; above 100 is refused', async () => {
    ok(await admin(['queue', 'update', 'small', '--strategy', 'Backfill', '--reservations', '5']));
    assert.equal(
      keyValues(ok(await admin(['queue', 'show', 'small']))).strategy,
      'Backfill, requested estimates, 5 reservations',
    );
    fails(
      await admin(['queue', 'update', 'small', '--reservations', '101']),
      1,
      /backfill\.reservations" must be <= 100/,
    );
    ok(await admin(['queue', 'update', 'small', '--reservations', '1']));
    assert.equal(
      keyValues(ok(await admin(['queue', 'show', 'small']))).strategy,
      'Backfill, requested estimates, 1 reservation (EASY)',
    );
  });

  it('leaves a cohort with --no-cohort', async () => {
    const q = parseJson<QueueJson>(
      await admin([
        'queue',
        'update',
        'research',
        '--no-cohort',
        '--borrowing-limit',
        '',
        '--lending-limit',
        '',
        '-o',
        'json',
      ]),
    );
    assert.deepEqual([q.cohort, q.borrowingLimit, q.lendingLimit], [null, {}, {}]);
  });

  it('refuses an empty update as a usage error', async () => {
    fails(await admin(['queue', 'update', 'research']), 2, /^berth: nothing to update/);
  });

  it('refuses to delete a queue that projects use, naming them', async () => {
    ok(await admin(['project', 'create', 'ml', '--queue', 'default']));
    fails(
      await admin(['queue', 'delete', 'default']),
      1,
      /^berth: cluster queue "default" is used by projects default, ml; move or delete them first\n$/,
    );
    assert.equal(row(ok(await admin(['queue', 'list'])), 'NAME', 'default').NAME, 'default');
  });

  it('deletes an unused queue', async () => {
    assert.equal(ok(await admin(['queue', 'delete', 'small'])), 'cluster queue small deleted\n');
    fails(await admin(['queue', 'show', 'small']), 1, /^berth: cluster queue "small" not found\n$/);
  });
});
