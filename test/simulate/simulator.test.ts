/** The virtual-clock simulator on tiny scenarios whose every time can be worked out by hand. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { expandScenario, type Scenario } from '../../src/simulate/scenario.js';
import { simulate, type SimulateOptions } from '../../src/simulate/simulator.js';
import { every, oneCohort, queueSet } from './helpers.js';

const run = (cfg: Scenario, opts?: SimulateOptions) => simulate(expandScenario(cfg), opts);
const times = (r: ReturnType<typeof run>) => r.records.map((w) => [w.createdAt, w.admittedAt, w.finishedAt]);
const classOf = (r: ReturnType<typeof run>, name: string) =>
  r.report.workloadClasses.find((c) => c.className === name);

const small = { className: 'small', runtimeMs: 100, request: 1 };

describe('simulate', () => {
  it('one queue of quota 2, three 1-cpu workloads of 100 ms: the third waits for the first to end', () => {
    const r = run(oneCohort(queueSet('cq', 2, every(10, 3, small))));
    assert.deepEqual(times(r), [
      [10, 10, 110],
      [20, 20, 120],
      [30, 110, 210],
    ]);
    assert.equal(r.report.wallMs, 210);
    assert.equal(r.report.admissions, 3);
    // 3 × 100 cpu·ms held over 2 cpu × 210 ms.
    assert.equal(r.report.lowestUsagePercent, (100 * 300) / (2 * 210));
    assert.deepEqual(classOf(r, 'small'), {
      className: 'small',
      count: 3,
      avgTimeToAdmissionMs: (0 + 0 + 80) / 3,
      avgTimeToFinishMs: (100 + 100 + 180) / 3,
      evictions: 0,
      evictedUnitSeconds: 0,
    });
  });

  it('admission latency: quota is held from the decision, the run ends latency + runtime later', () => {
    const r = run(oneCohort(queueSet('cq', 2, every(10, 3, small))), { admissionLatencyMs: 5 });
    assert.deepEqual(times(r), [
      [10, 10, 115],
      [20, 20, 125],
      [30, 115, 220],
    ]);
    assert.deepEqual(
      r.records.map((w) => w.runs),
      [[[10, 115]], [[20, 125]], [[115, 220]]],
    );
  });

  it('preemption: a higher priority evicts both running workloads, which run again in full', () => {
    const cfg = oneCohort({
      ...queueSet(
        'cq',
        2,
        every(10, 2, { className: 'low', runtimeMs: 100, request: 1, priority: 0 }),
        every(30, 1, { className: 'high', runtimeMs: 50, request: 2, priority: 10 }),
      ),
      withinClusterQueue: 'LowerPriority',
    });
    const r = run(cfg);
    const [low1, low2, high] = r.records;
    assert.deepEqual(
      r.records.map((w) => [w.className, w.createdAt]),
      [
        ['low', 10],
        ['low', 20],
        ['high', 30],
      ],
    );
    assert.deepEqual(high?.runs, [[30, 80]]);
    assert.deepEqual(low1?.runs, [
      [10, 30],
      [80, 180],
    ]);
    assert.deepEqual(low2?.runs, [
      [20, 30],
      [80, 180],
    ]);
    assert.deepEqual(
      r.records.map((w) => w.evictions),
      [1, 1, 0],
    );
    assert.equal(classOf(r, 'low')?.evictions, 2);
    // The runs the eviction ended, [10, 30] and [20, 30], at their requests: the work lost.
    const request = low1.request;
    assert.equal(classOf(r, 'low')?.evictedUnitSeconds, (request * (20 + 10)) / 1000);
    assert.equal(classOf(r, 'high')?.evictedUnitSeconds, 0);
    assert.equal(classOf(r, 'low')?.avgTimeToAdmissionMs, 0, 'time to admission counts the first admission');
    assert.equal(classOf(r, 'low')?.avgTimeToFinishMs, (170 + 160) / 2);
    assert.equal(r.report.admissions, 5);
    assert.equal(r.report.wallMs, 180);
    // Usage counts every interval quota was held, the lost runs included: (20 + 10 + 200 + 100) / (2 × 180).
    assert.equal(r.report.lowestUsagePercent, (100 * 330) / (2 * 180));
  });

  it('without a preemption policy the higher priority waits instead', () => {
    const cfg = oneCohort(
      queueSet(
        'cq',
        2,
        every(10, 2, { className: 'low', runtimeMs: 100, request: 1, priority: 0 }),
        every(30, 1, { className: 'high', runtimeMs: 50, request: 2, priority: 10 }),
      ),
    );
    const r = run(cfg);
    assert.deepEqual(times(r)[2], [30, 120, 170]);
    assert.equal(
      r.report.workloadClasses.reduce((s, c) => s + c.evictions, 0),
      0,
    );
  });

  it('a stop latency keeps the victims holding quota until they have stopped', () => {
    const cfg = oneCohort({
      ...queueSet(
        'cq',
        2,
        every(10, 2, { className: 'low', runtimeMs: 100, request: 1 }),
        every(30, 1, { className: 'high', runtimeMs: 50, request: 2, priority: 10 }),
      ),
      withinClusterQueue: 'LowerPriority',
    });
    const r = run(cfg, { stopLatencyMs: 7 });
    assert.deepEqual(r.records[2]?.runs, [[37, 87]]);
    assert.deepEqual(r.records[0]?.runs, [
      [10, 37],
      [87, 187],
    ]);
  });

  it('borrowing: an idle queue lends its quota to a busy one in the same cohort', () => {
    const busy = queueSet('busy', 2, every(0, 4, small));
    const r = run(oneCohort(busy, queueSet('idle', 2)));
    assert.deepEqual(
      r.records.map((w) => w.admittedAt),
      [0, 0, 0, 0],
    );
    assert.equal(r.report.wallMs, 100);
    assert.deepEqual(
      r.report.queueClasses.map((q) => [q.className, q.usagePercent]),
      [
        ['busy', 200],
        ['idle', 0],
      ],
    );
    assert.equal(r.report.lowestUsagePercent, 0);

    const limited = run(oneCohort({ ...busy, borrowingLimit: 1 }, queueSet('idle', 2)));
    assert.deepEqual(
      limited.records.map((w) => w.admittedAt),
      [0, 0, 0, 100],
    );
    assert.equal(limited.report.wallMs, 200);
  });

  it('reclaim within the cohort: a lender takes its quota back from a borrower', () => {
    const cfg = oneCohort(
      queueSet('borrower', 1, every(10, 2, { className: 'b', runtimeMs: 1000, request: 1, priority: 100 })),
      {
        ...queueSet('lender', 1, every(50, 1, { className: 'l', runtimeMs: 10, request: 1 })),
        reclaimWithinCohort: 'Any',
      },
    );
    const r = run(cfg);
    // The borrower's second workload (borrowing the lender's 1) is evicted at 50, back at 60.
    assert.deepEqual(
      r.records.map((w) => [w.className, w.runs]),
      [
        ['b', [[10, 1010]]],
        [
          'b',
          [
            [20, 50],
            [60, 1060],
          ],
        ],
        ['l', [[50, 60]]],
      ],
    );
  });

  it('a workload that can never fit stays unfinished and is counted as such', () => {
    const r = run(
      oneCohort({ ...queueSet('cq', 1, every(10, 1, { ...small, request: 2 })), borrowingLimit: 0 }),
    );
    assert.equal(r.report.unfinished, 1);
    assert.equal(r.records[0]?.admittedAt, null);
    assert.equal(classOf(r, 'small')?.avgTimeToAdmissionMs, null);
  });

  it('measures every scheduling pass', () => {
    const r = run(oneCohort(queueSet('cq', 2, every(10, 3, small))));
    assert.ok(r.passes >= 3, `${r.passes} passes`);
    assert.ok(r.report.decisionP99Ms !== null && r.report.decisionP99Ms >= 0);
  });
});
