/** The pure parts of the real-run driver (bench/kueue): timelines to runs, and the metrics summary. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runsOf } from '../../bench/kueue/collect.js';
import { summaryQuantile } from '../../bench/kueue/metrics.js';
import { jobBody } from '../../bench/kueue/submit.js';
import type { PlannedWorkload } from '../../src/simulate/scenario.js';

const at = (ms: number) => new Date(ms).toISOString();

describe('runsOf', () => {
  it('pairs each admission with the requeue or end that follows it', () => {
    const events = [
      { at: at(1000), type: 'submitted' },
      { at: at(1500), type: 'admitted' },
      { at: at(1510), type: 'started' },
      { at: at(1700), type: 'requeued' },
      { at: at(2000), type: 'admitted' },
      { at: at(2300), type: 'succeeded' },
    ];
    assert.deepEqual(runsOf(events), {
      firstAdmit: 1500,
      admits: 2,
      runs: [
        [1500, 1700],
        [2000, 2300],
      ],
    });
  });

  it('a job never admitted has no runs', () => {
    assert.deepEqual(runsOf([{ at: at(1), type: 'submitted' }]), { firstAdmit: null, admits: 0, runs: [] });
  });
});

describe('summaryQuantile', () => {
  const text = [
    '# HELP berth_scheduler_pass_seconds Time of one scheduling pass',
    '# TYPE berth_scheduler_pass_seconds summary',
    'berth_scheduler_pass_seconds{quantile="0.5"} 0.0001',
    'berth_scheduler_pass_seconds{quantile="0.99",instance="x"} 0.0042',
    'berth_scheduler_pass_seconds_sum 1.5',
  ].join('\n');

  it('finds a quantile among other labels', () => {
    assert.equal(summaryQuantile(text, 'berth_scheduler_pass_seconds', '0.99'), 0.0042);
    assert.equal(summaryQuantile(text, 'berth_scheduler_pass_seconds', '0.5'), 0.0001);
  });

  it('null when the metric or the quantile is missing, or not a number', () => {
    assert.equal(summaryQuantile(text, 'berth_other', '0.99'), null);
    assert.equal(summaryQuantile(text, 'berth_scheduler_pass_seconds', '0.9'), null);
    assert.equal(summaryQuantile('m{quantile="0.99"} NaN', 'm', '0.99'), null);
  });
});

describe('jobBody', () => {
  it("declares the runtime as the simulated factory's sleep, the request in the scenario's resource", () => {
    const w = { name: 'small-0-3-0', runtimeMs: 50, request: 1, priority: 50 } as PlannedWorkload;
    assert.deepEqual(jobBody(w, 'cpu'), {
      name: 'small-0-3-0',
      command: ['sleep', '0.05'],
      requests: { cpu: '1' },
      priority: 50,
    });
  });
});
