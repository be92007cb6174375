/** Report arithmetic on hand-made records. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport } from '../../src/cli/simulate-report.js';
import { buildReport, type WorkloadRecord } from '../../src/simulate/report.js';
import type { PlannedQueue } from '../../src/simulate/scenario.js';

const queue = (name: string, className: string, nominal: number): PlannedQueue => ({
  name,
  cohort: 'c-0',
  className,
  nominal,
  borrowingLimit: null,
  reclaimWithinCohort: 'Never',
  withinClusterQueue: 'Never',
});

const QUEUES = [queue('a-1', 'a', 10), queue('a-2', 'a', 10), queue('b-1', 'b', 4)];

const rec = (r: Partial<WorkloadRecord> & Pick<WorkloadRecord, 'queue' | 'className'>): WorkloadRecord => ({
  request: 1,
  createdAt: 1000,
  admittedAt: 1000,
  finishedAt: 2000,
  evictions: 0,
  ...r,
});

// Generation starts at 1000; the last workload finishes at 11000: wall 10 s.
const RECORDS: WorkloadRecord[] = [
  rec({ queue: 'a-1', className: 'x', request: 10, createdAt: 1000, admittedAt: 2000, finishedAt: 11000 }),
  rec({ queue: 'a-2', className: 'x', request: 5, createdAt: 3000, admittedAt: 3000, finishedAt: 7000 }),
  rec({
    queue: 'b-1',
    className: 'y',
    request: 2,
    createdAt: 1000,
    admittedAt: 1500,
    finishedAt: 9000,
    evictions: 2,
    runs: [
      [1500, 2500],
      [4000, 5000],
      [8000, 9000],
    ],
  }),
];

describe('buildReport', () => {
  const r = buildReport(QUEUES, RECORDS, { start: 1000, admissions: 5, decisionP99Ms: 0.25 });

  it('wall time runs from the start of generation to the last finish', () => {
    assert.equal(r.wallMs, 10_000);
    assert.equal(r.workloads, 3);
    assert.equal(r.unfinished, 0);
  });

  it('usage per queue class: Σ held units × time over Σ nominal × wall', () => {
    // a: (10 × 9000 + 5 × 4000) / (20 × 10000) = 55 %; b: 2 × 3000 / (4 × 10000) = 15 %.
    assert.deepEqual(r.queueClasses, [
      { className: 'a', queues: 2, nominal: 20, usagePercent: 55 },
      { className: 'b', queues: 1, nominal: 4, usagePercent: 15 },
    ]);
    assert.equal(r.lowestUsagePercent, 15);
    assert.equal(r.usageApproximated, 0);
  });

  it('per workload class: counts, average times to admission and to finish, evictions and the work they lost', () => {
    // y lost its first two runs: 2 units × (1 s + 1 s); its last run finished.
    assert.deepEqual(r.workloadClasses, [
      {
        className: 'x',
        count: 2,
        avgTimeToAdmissionMs: 500,
        avgTimeToFinishMs: 7000,
        evictions: 0,
        evictedUnitSeconds: 0,
      },
      {
        className: 'y',
        count: 1,
        avgTimeToAdmissionMs: 500,
        avgTimeToFinishMs: 8000,
        evictions: 2,
        evictedUnitSeconds: 4,
      },
    ]);
    assert.equal(r.admissions, 5);
    assert.equal(r.admissionsPerSecond, 0.5);
  });

  it('without run intervals an evicted workload counts from first admission to finish, and the report says so', () => {
    const noRuns = RECORDS.map(({ runs: _, ...w }) => w);
    const approx = buildReport(QUEUES, noRuns, { start: 1000, admissions: 5, decisionP99Ms: null });
    // b: 2 × 7500 / (4 × 10000) = 37.5 %
    assert.equal(approx.queueClasses[1]?.usagePercent, 37.5);
    assert.equal(approx.usageApproximated, 1);
    assert.match(
      formatReport(approx),
      /note: for 1 evicted workloads only first admission → finish is known/,
    );
    assert.match(formatReport(approx), /p99 scheduler decision time: n\/a/);
  });

  it('unfinished and never-admitted workloads are counted, not averaged', () => {
    const partial = buildReport(
      QUEUES,
      [...RECORDS, rec({ queue: 'a-1', className: 'z', admittedAt: null, finishedAt: null })],
      { start: 1000, admissions: 5, decisionP99Ms: null },
    );
    assert.equal(partial.unfinished, 1);
    assert.equal(partial.wallMs, 10_000);
    assert.deepEqual(partial.workloadClasses[2], {
      className: 'z',
      count: 1,
      avgTimeToAdmissionMs: null,
      avgTimeToFinishMs: null,
      evictions: 0,
      evictedUnitSeconds: 0,
    });
  });
});

describe('formatReport', () => {
  it('prints an aligned table of every figure', () => {
    const text = formatReport(
      buildReport(QUEUES, RECORDS, { start: 1000, admissions: 5, decisionP99Ms: 0.25 }),
    );
    assert.equal(
      text,
      [
        'wall time: 10.0 s (3 workloads)',
        '',
        'QUEUE CLASS  QUEUES  NOMINAL  AVG USAGE',
        'a            2       20       55.0 %',
        'b            1       4        15.0 %',
        '',
        'WORKLOAD CLASS  COUNT  AVG TO ADMISSION  AVG TO FINISH  EVICTIONS  LOST TO EVICTIONS',
        'x               2      0.5 s             7.0 s          0          0.0 unit·s',
        'y               1      0.5 s             8.0 s          2          4.0 unit·s',
        '',
        'lowest cluster-queue usage: 15.0 % of nominal',
        'admissions: 5 (0.5/s)',
        'p99 scheduler decision time: 250 µs',
      ].join('\n'),
    );
  });
});
