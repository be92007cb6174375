/** Scenario configs: parsing (each kind of mistake named by its key) and expansion. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/domain/errors.js';
import { expandScenario, parseScenario } from '../../src/simulate/scenario.js';
import { ROOT } from '../helpers/root.js';

const BASELINE = join(ROOT, 'bench', 'kueue', 'baseline.yaml');
const LARGE = join(ROOT, 'bench', 'kueue', 'large-scale.yaml');

const MINIMAL = `
cohorts:
  - className: cohort
    count: 2
    queuesSets:
      - className: cq
        count: 3
        nominalQuota: 20
        borrowingLimit: 100
        reclaimWithinCohort: Any
        withinClusterQueue: LowerPriority
        workloadsSets:
          - count: 2
            creationIntervalMs: 10
            workloads:
              - { className: a, runtimeMs: 100, priority: 5, request: 1 }
              - { className: b, runtimeMs: 200, request: 2 }
          - count: 1
            creationIntervalMs: 15
            workloads:
              - { className: c, runtimeMs: 50, priority: 9, request: 20 }
`;

/** The ConfigError `yaml` gives, as its message. */
function failure(yaml: string, file?: string): string {
  try {
    parseScenario(yaml, file);
  } catch (e) {
    assert.ok(e instanceof ConfigError, `not a ConfigError: ${String(e)}`);
    return e.message;
  }
  assert.fail('the scenario was accepted');
}

/** MINIMAL with one line replaced. */
const edit = (from: string, to: string): string => {
  assert.ok(MINIMAL.includes(from), from);
  return MINIMAL.replace(from, to);
};

describe('parseScenario', () => {
  it("accepts Kueue's baseline and large-scale configs", () => {
    const base = parseScenario(readFileSync(BASELINE, 'utf8'));
    assert.equal(base.cohorts[0]?.count, 5);
    assert.equal(base.cohorts[0]?.queuesSets[0]?.workloadsSets.length, 3);
    assert.equal(parseScenario(readFileSync(LARGE, 'utf8')).cohorts[0]?.count, 20);
  });

  it('names an unknown key, at the top level and nested', () => {
    assert.equal(failure(`${MINIMAL}\nextra: 1\n`), 'extra: unknown key');
    assert.equal(
      failure(edit('nominalQuota: 20', 'nominalQouta: 20')),
      'cohorts[0].queuesSets[0].nominalQouta: unknown key',
    );
    assert.equal(
      failure(edit('runtimeMs: 50,', 'runtimeMs: 50, runTime: 3,')),
      'cohorts[0].queuesSets[0].workloadsSets[1].workloads[0].runTime: unknown key',
    );
  });

  it('names a missing key, a wrong type and a value out of range', () => {
    assert.equal(
      failure(edit('        nominalQuota: 20\n', '')),
      'cohorts[0].queuesSets[0].nominalQuota: is required',
    );
    assert.equal(failure(edit('count: 2\n', 'count: two\n')), 'cohorts[0].count: expected integer');
    assert.equal(
      failure(edit('request: 2', 'request: 0')),
      'cohorts[0].queuesSets[0].workloadsSets[0].workloads[1].request: expected integer to be greater or equal to 1',
    );
    assert.equal(
      failure(edit('creationIntervalMs: 15', 'creationIntervalMs: 1.5')),
      'cohorts[0].queuesSets[0].workloadsSets[1].creationIntervalMs: expected integer',
    );
    assert.equal(failure('cohorts: []'), 'cohorts: expected array length to be greater or equal to 1');
  });

  it('lists the allowed values of a policy', () => {
    assert.equal(
      failure(edit('reclaimWithinCohort: Any', 'reclaimWithinCohort: Sometimes')),
      'cohorts[0].queuesSets[0].reclaimWithinCohort: must be one of Never, LowerPriority, Any',
    );
  });

  it('refuses class names that do not make berth names, and queues defined twice', () => {
    assert.match(
      failure(edit('className: cq', 'className: CQ_1')),
      /^cohorts\[0\]\.queuesSets\[0\]\.className: "CQ_1" must be a DNS label/,
    );
    assert.match(
      failure(edit('className: cq', `className: ${'q'.repeat(51)}`)),
      /^cohorts\[0\]\.queuesSets\[0\]\.className: makes queue name "q+-0-2-cohort-1", which must be a DNS label/,
    );
    assert.match(
      failure(edit('className: a,', 'className: "A b",')),
      /workloads\[0\]\.className: "A b" must be a DNS label/,
    );
    const set = `
  - className: cohort
    count: 1
    queuesSets:
      - { className: cq, count: 1, nominalQuota: 1, workloadsSets: [] }`;
    assert.equal(
      failure(`cohorts:${set}${set}`),
      'cohorts[1].queuesSets[0].className: queue cq-0-0-cohort-0 is defined twice',
    );
  });

  it('checks resourceName, and names the file', () => {
    assert.match(
      failure(`resourceName: "bad name"\n${MINIMAL}`),
      /^resourceName: "bad name" must be a resource name/,
    );
    assert.match(failure(`resourceName: jobs\n${MINIMAL}`), /^resourceName: jobs is implicit/);
    assert.equal(failure('cohorts: [', 'x.yaml').split(':').slice(0, 2).join(':'), 'x.yaml: not valid YAML');
    assert.equal(failure('- 1', 'x.yaml'), 'x.yaml: must be a mapping with a cohorts list');
    assert.equal(failure(''), 'cohorts: is required');
  });
});

describe('expandScenario', () => {
  it("makes Kueue's queues and names, one cohort per count", () => {
    const plan = expandScenario(parseScenario(MINIMAL));
    assert.equal(plan.resource, 'cpu');
    assert.deepEqual(plan.cohorts, ['cohort-0', 'cohort-1']);
    assert.deepEqual(
      plan.queues.map((q) => q.name),
      [
        'cq-0-0-cohort-0',
        'cq-0-1-cohort-0',
        'cq-0-2-cohort-0',
        'cq-0-0-cohort-1',
        'cq-0-1-cohort-1',
        'cq-0-2-cohort-1',
      ],
    );
    assert.deepEqual(plan.queues[0], {
      name: 'cq-0-0-cohort-0',
      cohort: 'cohort-0',
      className: 'cq',
      nominal: 20,
      borrowingLimit: 100,
      reclaimWithinCohort: 'Any',
      withinClusterQueue: 'LowerPriority',
    });
  });

  it('creates each template in order, waiting the interval before each creation; sets run side by side', () => {
    const plan = expandScenario(parseScenario(MINIMAL));
    assert.equal(plan.workloads.length, 6 * (2 * 2 + 1));
    const first = plan.workloads.filter((w) => w.queue === 'cq-0-0-cohort-0');
    assert.deepEqual(
      first.map((w) => [w.at, w.name, w.className, w.set]),
      [
        [10, 'a-0-0-0', 'a', 0],
        [15, 'c-1-0-0', 'c', 1],
        [20, 'b-0-0-1', 'b', 0],
        [30, 'a-0-1-0', 'a', 0],
        [40, 'b-0-1-1', 'b', 0],
      ],
    );
    const b = first[2];
    assert.deepEqual(b && [b.runtimeMs, b.priority, b.request, b.queueClass, b.cohort], [
      200,
      0,
      2,
      'cq',
      'cohort-0',
    ]);
  });

  it('sorts all workloads by creation time and numbers them from 1', () => {
    const plan = expandScenario(parseScenario(MINIMAL));
    assert.deepEqual(
      plan.workloads.map((w) => w.seq),
      plan.workloads.map((_, i) => i + 1),
    );
    for (let i = 1; i < plan.workloads.length; i++) {
      assert.ok((plan.workloads[i - 1]?.at ?? 0) <= (plan.workloads[i]?.at ?? 0));
    }
    // At equal times, generation order: queue by queue.
    assert.deepEqual(
      plan.workloads.filter((w) => w.at === 10).map((w) => w.queue),
      plan.queues.map((q) => q.name),
    );
  });

  it("expands Kueue's baseline: 30 queues, 15,000 workloads, Kueue's timings", () => {
    const plan = expandScenario(parseScenario(readFileSync(BASELINE, 'utf8')));
    assert.equal(plan.queues.length, 30);
    assert.equal(plan.cohorts.length, 5);
    assert.equal(plan.workloads.length, 15_000);
    const byClass = (c: string) => plan.workloads.filter((w) => w.className === c);
    assert.deepEqual(
      ['small', 'medium', 'large'].map((c) => byClass(c).length),
      [10_500, 3_000, 1_500],
    );
    const span = (c: string) => [
      Math.min(...byClass(c).map((w) => w.at)),
      Math.max(...byClass(c).map((w) => w.at)),
    ];
    assert.deepEqual(span('small'), [100, 35_000]);
    assert.deepEqual(span('medium'), [500, 50_000]);
    assert.deepEqual(span('large'), [1_200, 60_000]);
    assert.equal(plan.queues.at(-1)?.name, 'cq-0-5-cohort-4');
  });

  it('takes resourceName, and defaults a missing priority and policies', () => {
    const plan = expandScenario(
      parseScenario(`resourceName: nvidia.com/gpu
cohorts:
  - className: c
    count: 1
    queuesSets:
      - className: q
        count: 1
        nominalQuota: 4
        workloadsSets: []
`),
    );
    assert.equal(plan.resource, 'nvidia.com/gpu');
    assert.deepEqual(plan.workloads, []);
    assert.deepEqual(
      plan.queues.map((q) => [q.borrowingLimit, q.reclaimWithinCohort, q.withinClusterQueue]),
      [[null, 'Never', 'Never']],
    );
  });
});
