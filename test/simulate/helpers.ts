/** Small scenarios for the simulator tests, built as typed objects. */
import type { Scenario } from '../../src/simulate/scenario.js';

type QueuesSet = Scenario['cohorts'][number]['queuesSets'][number];
type WorkloadsSet = QueuesSet['workloadsSets'][number];

/** One cohort (`cohort-0`) holding the given queue sets. */
export const oneCohort = (...queuesSets: QueuesSet[]): Scenario => ({
  cohorts: [{ className: 'cohort', count: 1, queuesSets }],
});

export const queueSet = (
  className: string,
  nominalQuota: number,
  ...workloadsSets: WorkloadsSet[]
): QueuesSet => ({
  className,
  count: 1,
  nominalQuota,
  workloadsSets,
});

/** `count` workloads of one class, one every `interval` ms (the first at +interval). */
export const every = (
  interval: number,
  count: number,
  w: { className: string; runtimeMs: number; request: number; priority?: number },
): WorkloadsSet => ({ count, creationIntervalMs: interval, workloads: [w] });
