/** The live what-if on a forecast's input: each kind of change, and the mistakes it names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyChange, whatIf, type ForecastInput } from '../../src/simulate/what-if.js';
import { admittedWorkload, queueModel, workload } from '../scheduler/helpers.js';

const NOW = 1_000_000;

/**
 * Queue a (1 cpu, held by project p for 10 s more) with a 1-cpu job of p and one of q waiting —
 * q's first, as fair share favours the project holding less; queue b idle.
 */
const input = (): ForecastInput => ({
  now: NOW,
  queues: [queueModel({ name: 'a', nominal: { cpu: 1 } }), queueModel({ name: 'b', nominal: { cpu: 4 } })],
  admitted: [
    {
      workload: admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 1 }, project: 'p' }),
      endsAt: NOW + 10_000,
      runtimeMs: 20_000,
    },
  ],
  pending: [
    { workload: workload({ id: 2, queue: 'a', requests: { cpu: 1 }, project: 'p' }), runtimeMs: 5_000 },
    { workload: workload({ id: 3, queue: 'a', requests: { cpu: 1 }, project: 'q' }), runtimeMs: 5_000 },
  ],
});

const starts = (r: ReturnType<typeof whatIf>) =>
  Object.fromEntries(
    r.jobs.map((j) => [
      j.id,
      [j.now === null ? null : j.now - NOW, j.changed === null ? null : j.changed - NOW],
    ]),
  );

describe('whatIf', () => {
  it('no change: both forecasts agree', () => {
    assert.deepEqual(starts(whatIf(input(), {})), { 2: [15_000, 15_000], 3: [10_000, 10_000] });
  });

  it('more quota: the waiting jobs start now', () => {
    const r = whatIf(input(), { quota: [{ queue: 'a', resource: 'cpu', amount: '3' }] });
    assert.deepEqual(starts(r), { 2: [15_000, 0], 3: [10_000, 0] });
    assert.deepEqual(r.queues, [
      {
        queue: 'a',
        pending: 2,
        now: { starting: 2, medianMs: 10_000, meanMs: 12_500 },
        changed: { starting: 2, medianMs: 0, meanMs: 0 },
      },
    ]);
  });

  it('a cohort with the idle queue: a borrows, and both start now', () => {
    const r = whatIf(input(), { cohort: { a: 'shared', b: 'shared' } });
    assert.deepEqual(starts(r), { 2: [15_000, 0], 3: [10_000, 0] });
  });

  it("a project's weight reorders the jobs under fair share", () => {
    // Queue of 3 cpu: p holds 1 (until +30 s), q holds 2 (one until +10 s, one until +60 s). At
    // +10 s both hold 1 and p's job, older, goes first; with q weighing 10, q's does.
    const base: ForecastInput = {
      now: NOW,
      queues: [queueModel({ name: 'a', nominal: { cpu: 3 } })],
      admitted: [
        [1, 'p', 30_000],
        [4, 'q', 10_000],
        [5, 'q', 60_000],
      ].map(([id, project, ends]) => ({
        workload: admittedWorkload({
          id: id as number,
          queue: 'a',
          requests: { cpu: 1 },
          project: project as string,
        }),
        endsAt: NOW + (ends as number),
        runtimeMs: 1,
      })),
      pending: [
        { workload: workload({ id: 2, queue: 'a', requests: { cpu: 1 }, project: 'p' }), runtimeMs: 5_000 },
        { workload: workload({ id: 3, queue: 'a', requests: { cpu: 1 }, project: 'q' }), runtimeMs: 5_000 },
      ],
    };
    assert.deepEqual(starts(whatIf(base, { weight: { q: 10 } })), {
      2: [10_000, 15_000],
      3: [15_000, 10_000],
    });
  });

  it('names an unknown queue and a bad amount, and leaves its input alone', () => {
    const i = input();
    const before = structuredClone(i);
    assert.throws(
      () => applyChange(i, { quota: [{ queue: 'nope', resource: 'cpu', amount: '1' }] }),
      /--quota: no cluster queue named "nope" \(queues: a, b\)/,
    );
    assert.throws(
      () => applyChange(i, { borrowingLimit: [{ queue: 'a', resource: 'cpu', amount: 'x' }] }),
      /--borrowing-limit a:cpu: "x" is not a quantity/,
    );
    applyChange(i, { quota: [{ queue: 'a', resource: 'cpu', amount: '9' }], weight: { p: 2 } });
    assert.deepEqual(i, before);
  });
});
