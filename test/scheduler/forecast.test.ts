/**
 * The forecast behind start-time estimates: hand-worked cases (quota freed by expected ends,
 * borrowing, preemption, later arrivals, a held queue, the horizon), and a property: given the
 * exact runtimes, the forecast of a scenario is its simulation — every workload's forecast start
 * is the admission the simulator finds.
 */
import assert from 'node:assert/strict';
import { describe, it, test } from 'node:test';
import fc from 'fast-check';
import { parseAmount } from '../../src/domain/quantity.js';
import { forecast, type ForecastInput } from '../../src/scheduler/forecast.js';
import { expandScenario, type Scenario } from '../../src/simulate/scenario.js';
import { queueModel as plannedQueueModel, simulate } from '../../src/simulate/simulator.js';
import { admittedWorkload, queueModel, workload } from './helpers.js';

const NOW = 1_000_000;
const cpu = (n: number) => ({ cpu: n });

interface Case {
  name: string;
  input: ForecastInput;
  horizonMs?: number;
  /** Expected forecast start per pending id, as ms after NOW; null: none within the horizon. */
  starts: Record<number, number | null>;
}

const cases: Case[] = [
  {
    name: 'quota freed by the running job’s expected end, then by the first pending one’s runtime',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(2) })],
      admitted: [
        {
          workload: admittedWorkload({ id: 1, queue: 'q', requests: cpu(2) }),
          endsAt: NOW + 10_000,
          runtimeMs: 60_000,
        },
      ],
      pending: [
        { workload: workload({ id: 2, queue: 'q', requests: cpu(1) }), runtimeMs: 5_000 },
        { workload: workload({ id: 3, queue: 'q', requests: cpu(2) }), runtimeMs: 1_000 },
      ],
    },
    starts: { 2: 10_000, 3: 15_000 },
  },
  {
    name: 'an expected end already past is taken as now',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(1) })],
      admitted: [
        {
          workload: admittedWorkload({ id: 1, queue: 'q', requests: cpu(1) }),
          endsAt: NOW - 5_000,
          runtimeMs: 1,
        },
      ],
      pending: [{ workload: workload({ id: 2, queue: 'q', requests: cpu(1) }), runtimeMs: 5_000 }],
    },
    starts: { 2: 0 },
  },
  {
    name: 'borrowing: an idle queue of the cohort lends, so the job starts now',
    input: {
      now: NOW,
      queues: [
        queueModel({ name: 'a', nominal: cpu(1), cohort: 'c' }),
        queueModel({ name: 'b', nominal: cpu(2), cohort: 'c' }),
      ],
      admitted: [],
      pending: [{ workload: workload({ id: 1, queue: 'a', requests: cpu(3) }), runtimeMs: 1_000 }],
    },
    starts: { 1: 0 },
  },
  {
    name: 'preemption: a higher priority starts now; its victim runs again after it, in full',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(1), within: 'LowerPriority' })],
      admitted: [
        {
          workload: admittedWorkload({ id: 1, queue: 'q', requests: cpu(1) }),
          endsAt: NOW + 50_000,
          runtimeMs: 60_000,
        },
      ],
      pending: [
        { workload: workload({ id: 2, queue: 'q', requests: cpu(1), priority: 10 }), runtimeMs: 5_000 },
        { workload: workload({ id: 3, queue: 'q', requests: cpu(1) }), runtimeMs: 1_000 },
      ],
    },
    // 2 at once; then 1 (older than 3) again for its whole 60 s; then 3.
    starts: { 2: 0, 3: 65_000 },
  },
  {
    name: 'a later arrival (a retry after its backoff) is not started before it arrives',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(4) })],
      admitted: [],
      pending: [
        { workload: workload({ id: 1, queue: 'q', requests: cpu(1) }), runtimeMs: 1, arrivesAt: NOW + 7_000 },
      ],
    },
    starts: { 1: 7_000 },
  },
  {
    name: 'a queue on hold admits nothing: no estimate',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(4), stop: 'Hold' })],
      admitted: [],
      pending: [{ workload: workload({ id: 1, queue: 'q', requests: cpu(1) }), runtimeMs: 1 }],
    },
    starts: { 1: null },
  },
  {
    name: 'beyond the horizon: no estimate',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(1) })],
      admitted: [
        {
          workload: admittedWorkload({ id: 1, queue: 'q', requests: cpu(1) }),
          endsAt: NOW + 3_600_000,
          runtimeMs: 1,
        },
      ],
      pending: [{ workload: workload({ id: 2, queue: 'q', requests: cpu(1) }), runtimeMs: 1 }],
    },
    horizonMs: 60_000,
    starts: { 2: null },
  },
  {
    name: 'fair share: with one slot, the projects take turns',
    input: {
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(1) })],
      admitted: [],
      pending: [
        { workload: workload({ id: 1, queue: 'q', requests: cpu(1), project: 'a' }), runtimeMs: 1_000 },
        { workload: workload({ id: 2, queue: 'q', requests: cpu(1), project: 'a' }), runtimeMs: 1_000 },
        { workload: workload({ id: 3, queue: 'q', requests: cpu(1), project: 'b' }), runtimeMs: 1_000 },
      ],
    },
    starts: { 1: 0, 3: 1_000, 2: 2_000 },
  },
];

describe('forecast', () => {
  for (const c of cases)
    it(c.name, () => {
      const r = forecast(c.input, c.horizonMs === undefined ? {} : { horizonMs: c.horizonMs });
      const got: Record<number, number | null> = {};
      for (const id of Object.keys(c.starts).map(Number)) {
        const at = r.startAt.get(id);
        got[id] = at === undefined ? null : at - NOW;
      }
      assert.deepEqual(got, c.starts);
    });

  it('leaves its input alone: the live scheduler’s workloads are not changed', () => {
    const w = admittedWorkload({ id: 1, queue: 'q', requests: cpu(1) });
    const before = structuredClone(w);
    forecast({
      now: NOW,
      queues: [queueModel({ name: 'q', nominal: cpu(1) })],
      admitted: [{ workload: w, endsAt: NOW, runtimeMs: 1 }],
      pending: [],
    });
    assert.deepEqual(w, before);
  });
});

/** A small random scenario of one cohort, in Kueue's generator shape. */
const scenarioArb: fc.Arbitrary<Scenario> = fc
  .array(
    fc.record({
      nominal: fc.integer({ min: 1, max: 4 }),
      within: fc.constantFrom<'Never' | 'LowerPriority'>('Never', 'LowerPriority'),
      sets: fc.array(
        fc.record({
          count: fc.integer({ min: 1, max: 6 }),
          interval: fc.integer({ min: 0, max: 40 }),
          runtime: fc.integer({ min: 1, max: 120 }),
          request: fc.integer({ min: 1, max: 3 }),
          priority: fc.integer({ min: 0, max: 2 }),
        }),
        { minLength: 1, maxLength: 2 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map((queues) => ({
    cohorts: [
      {
        className: 'cohort',
        count: 1,
        queuesSets: queues.map((q, i) => ({
          className: `q${i}`,
          count: 1,
          nominalQuota: q.nominal,
          withinClusterQueue: q.within,
          workloadsSets: q.sets.map((s, j) => ({
            count: s.count,
            creationIntervalMs: s.interval,
            workloads: [
              { className: `w${i}-${j}`, runtimeMs: s.runtime, request: s.request, priority: s.priority },
            ],
          })),
        })),
      },
    ],
  }));

test('with exact runtimes, the forecast of a scenario is its simulation', () => {
  fc.assert(
    fc.property(scenarioArb, (scenario) => {
      const plan = expandScenario(scenario);
      const simulated = simulate(plan).records.map((r) => r.admittedAt);
      const f = forecast({
        now: 0,
        queues: plan.queues.map((q) => plannedQueueModel(q, plan.resource)),
        admitted: [],
        pending: plan.workloads.map((w) => ({
          workload: {
            id: w.seq,
            queue: w.queue,
            project: w.queue,
            priority: w.priority,
            createdAt: w.at,
            requests: { [plan.resource]: parseAmount(plan.resource, String(w.request)), jobs: 1 },
          },
          runtimeMs: w.runtimeMs,
          arrivesAt: w.at,
        })),
      });
      const forecast_ = plan.workloads.map((w) => f.startAt.get(w.seq) ?? null);
      assert.deepEqual(forecast_, simulated);
    }),
    { numRuns: 200 },
  );
});
