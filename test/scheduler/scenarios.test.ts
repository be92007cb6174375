/**
 * Kueue-style table of scheduling scenarios: queues, cohorts, limits, admitted and pending
 * workloads as data → which are admitted (and how much they borrow), which are preempted,
 * drained, and which stay pending. Amounts are written as quantities (cpu in cores).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAmounts } from '../../src/domain/quantity.js';
import { Scheduler, type Decision } from '../../src/scheduler/index.js';
import {
  admittedWorkload,
  queueModel,
  workload,
  type AdmittedSpec,
  type Quantities,
  type QueueSpec,
  type WorkloadSpec,
} from './helpers.js';

interface Want {
  /** Exactly the workloads admitted by the pass, with what each borrowed ({} for nothing). */
  admitted?: Record<number, Quantities>;
  /** The order of those admissions, when it matters. */
  order?: number[];
  /** Exactly the preemptions of the pass: preemptor → victims. */
  preempted?: Record<number, number[]>;
  drained?: number[];
  /** Exactly the workloads still pending afterwards. */
  pending: number[];
  /** explain(id).position afterwards, for some of them. */
  positions?: Record<number, number>;
}

type Action =
  | { release: number[] }
  | { requeue: number[] }
  | { enqueue: WorkloadSpec[] }
  | { withdraw: number[] }
  | { upsert: QueueSpec }
  | { remove: string };

interface Scenario {
  name: string;
  queues: QueueSpec[];
  weights?: Record<string, number>;
  admitted?: AdmittedSpec[];
  pending: WorkloadSpec[];
  want: Want;
  /** Further passes, each after some actions. */
  then?: { actions: Action[]; want: Want }[];
}

const cpu = (n: number): Quantities => ({ cpu: n });
/** from, from + 1, …, to */
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

const scenarios: Scenario[] = [
  {
    name: 'admits by priority, then creation, within nominal',
    queues: [{ name: 'a', nominal: cpu(4) }],
    pending: [
      { id: 1, queue: 'a', requests: cpu(2) },
      { id: 2, queue: 'a', requests: cpu(2), priority: 5 },
      { id: 3, queue: 'a', requests: cpu(2) },
    ],
    want: { admitted: { 1: {}, 2: {} }, order: [2, 1], pending: [3] },
  },
  {
    name: 'a quota on jobs caps concurrency',
    queues: [{ name: 'a', nominal: { cpu: 100, jobs: 2 } }],
    pending: [1, 2, 3].map((id) => ({ id, queue: 'a', requests: cpu(1) })),
    want: { admitted: { 1: {}, 2: {} }, pending: [3] },
  },
  {
    name: 'a resource the queue does not name is not limited',
    queues: [{ name: 'a', nominal: cpu(4) }],
    pending: [{ id: 1, queue: 'a', requests: { cpu: 1, memory: '100Gi' } }],
    want: { admitted: { 1: {} }, pending: [] },
  },
  {
    name: 'StrictFIFO: a head that does not fit blocks smaller followers',
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'StrictFIFO' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3) }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(2) },
      { id: 3, queue: 'a', requests: cpu(1) },
    ],
    want: { admitted: {}, pending: [2, 3] },
    then: [{ actions: [{ release: [1] }], want: { admitted: { 2: {}, 3: {} }, order: [2, 3], pending: [] } }],
  },
  {
    name: 'BestEffortFIFO: a workload that does not fit is skipped; it goes once quota is released',
    queues: [{ name: 'a', nominal: cpu(4) }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3) }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(2) },
      { id: 3, queue: 'a', requests: cpu(1) },
      { id: 4, queue: 'a', requests: cpu(1) },
    ],
    want: { admitted: { 3: {} }, pending: [2, 4] },
    then: [
      { actions: [], want: { admitted: {}, pending: [2, 4] } },
      { actions: [{ release: [1] }], want: { admitted: { 2: {}, 4: {} }, order: [2, 4], pending: [] } },
    ],
  },
  {
    name: 'BestEffortFIFO finds the one workload that fits among many, also in a sixth resource',
    queues: [{ name: 'a', nominal: { cpu: 100, memory: '100Gi', gpu: 8, fpga: 4, licence: 10, tape: 3 } }],
    admitted: [{ id: 1, queue: 'a', requests: { tape: 2 } }],
    pending: [
      ...Array.from({ length: 60 }, (_, i) => ({ id: i + 2, queue: 'a', requests: { cpu: 1, tape: 2 } })),
      { id: 62, queue: 'a', requests: { cpu: 1, tape: 1 } },
      ...Array.from({ length: 20 }, (_, i) => ({ id: i + 63, queue: 'a', requests: { cpu: 1, tape: 2 } })),
    ],
    want: {
      admitted: { 62: {} },
      pending: [
        ...Array.from({ length: 60 }, (_, i) => i + 2),
        ...Array.from({ length: 20 }, (_, i) => i + 63),
      ],
    },
  },
  {
    name: 'outside a cohort a queue has exactly its nominal (a borrowing limit is moot)',
    queues: [{ name: 'a', nominal: cpu(4), borrowingLimit: cpu(4) }],
    pending: [
      { id: 1, queue: 'a', requests: cpu(3) },
      { id: 2, queue: 'a', requests: cpu(3) },
    ],
    want: { admitted: { 1: {} }, pending: [2] },
  },
  {
    name: 'borrowing from an idle cohort member records what was borrowed',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    pending: [
      { id: 1, queue: 'a', requests: cpu(3) },
      { id: 2, queue: 'a', requests: cpu(3) },
    ],
    want: { admitted: { 1: {}, 2: cpu(2) }, order: [1, 2], pending: [] },
  },
  {
    name: 'the borrowing limit caps usage at nominal + borrowingLimit',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', borrowingLimit: cpu(1) },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    pending: [
      { id: 1, queue: 'a', requests: cpu(3) },
      { id: 2, queue: 'a', requests: cpu(3) },
      { id: 3, queue: 'a', requests: cpu(2) },
    ],
    want: { admitted: { 1: {}, 3: cpu(1) }, pending: [2] },
  },
  {
    name: 'a lending limit keeps the rest of the lender’s nominal private',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c' },
      { name: 'b', nominal: cpu(6), cohort: 'c', lendingLimit: cpu(2) },
    ],
    pending: [
      { id: 1, queue: 'a', requests: cpu(4) },
      { id: 2, queue: 'a', requests: cpu(3) },
      { id: 3, queue: 'a', requests: cpu(2) },
    ],
    want: { admitted: { 1: {}, 3: cpu(2) }, pending: [2] },
  },
  {
    name: 'a lender still gets its private part when the pool is used up, not more',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c' },
      { name: 'b', nominal: cpu(6), cohort: 'c', lendingLimit: cpu(2) },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(4) },
      { id: 2, queue: 'a', requests: cpu(2) },
    ],
    pending: [
      { id: 3, queue: 'b', requests: cpu(4) },
      { id: 4, queue: 'b', requests: cpu(1) },
    ],
    want: { admitted: { 3: {} }, pending: [4] },
    then: [{ actions: [{ release: [2] }], want: { admitted: { 4: {} }, pending: [] } }],
  },
  {
    name: 'a queue outside the cohort lends nothing',
    queues: [
      { name: 'a', nominal: cpu(4) },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    pending: [
      { id: 1, queue: 'b', requests: cpu(3) },
      { id: 2, queue: 'b', requests: cpu(3) },
    ],
    want: { admitted: { 1: {} }, pending: [2] },
  },
  {
    name: 'heads that fit without borrowing go before borrowing ones, whatever their priority',
    queues: [
      { name: 'a', nominal: cpu(2), cohort: 'c' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
    ],
    pending: [
      { id: 1, queue: 'a', requests: cpu(4), priority: 10 },
      { id: 2, queue: 'b', requests: cpu(2) },
    ],
    want: { admitted: { 2: {} }, pending: [1] },
  },
  {
    name: 'several borrowers share the pool; a member whose nominal is lent waits',
    queues: [
      { name: 'a', nominal: cpu(2), cohort: 'c' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
      { name: 'd', nominal: cpu(2), cohort: 'c' },
    ],
    pending: [
      { id: 1, queue: 'a', requests: cpu(3) },
      { id: 2, queue: 'b', requests: cpu(3) },
      { id: 3, queue: 'd', requests: cpu(1) },
    ],
    want: { admitted: { 3: {}, 1: cpu(1) }, order: [3, 1], pending: [2] },
  },
  {
    name: 'a parked workload is retried when its cohort releases quota',
    queues: [
      { name: 'a', nominal: cpu(2), cohort: 'c' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
    ],
    admitted: [{ id: 1, queue: 'b', requests: cpu(3) }],
    pending: [{ id: 2, queue: 'a', requests: cpu(2) }],
    want: { admitted: {}, pending: [2] },
    then: [{ actions: [{ release: [1] }], want: { admitted: { 2: {} }, pending: [] } }],
  },
  {
    name: 'LowerPriority preempts the most recently admitted lower-priority workload',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), admittedAt: 1 },
      { id: 2, queue: 'a', requests: cpu(2), admittedAt: 2 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 10 }],
    want: { preempted: { 3: [2] }, pending: [3] },
    then: [
      // The preemptor waits for its victim and does not preempt again meanwhile.
      { actions: [], want: { pending: [3] } },
      { actions: [{ requeue: [2] }], want: { admitted: { 3: {} }, pending: [2] } },
    ],
  },
  {
    name: 'BestEffortFIFO: when the head cannot preempt, a later workload that can does',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(4) }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(6), priority: 5 },
      { id: 3, queue: 'a', requests: cpu(2), priority: 5 },
    ],
    want: { preempted: { 3: [1] }, pending: [2, 3] },
  },
  {
    name: "an interactive workload is spared where its queue's preemption.interactive is Never (the default): the next victim is taken",
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), admittedAt: 1 },
      { id: 2, queue: 'a', requests: cpu(2), admittedAt: 2, interactive: true },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 10 }],
    want: { preempted: { 3: [1] }, pending: [3] },
  },
  {
    name: 'with every candidate interactive and spared, nothing is preempted',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), interactive: true },
      { id: 2, queue: 'a', requests: cpu(2), interactive: true },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 10 }],
    want: { pending: [3] },
    // Once one has ended, the preemptor takes its quota: nothing was held back for it.
    then: [{ actions: [{ release: [2] }], want: { admitted: { 3: {} }, pending: [] } }],
  },
  {
    name: 'preemption.interactive Allowed: an interactive workload is preempted like any',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority', interactive: 'Allowed' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), admittedAt: 1 },
      { id: 2, queue: 'a', requests: cpu(2), admittedAt: 2, interactive: true },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 10 }],
    want: { preempted: { 3: [2] }, pending: [3] },
  },
  {
    name: "a cohort's reclaim spares a borrowing queue's interactive workload where that queue says Never",
    queues: [
      { name: 'a', nominal: cpu(2), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
    ],
    admitted: [{ id: 1, queue: 'b', requests: cpu(4), interactive: true }],
    pending: [{ id: 2, queue: 'a', requests: cpu(2) }],
    want: { pending: [2] },
  },
  {
    name: 'LowerPriority never preempts equal priority',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2) },
      { id: 2, queue: 'a', requests: cpu(2) },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2) }],
    want: { pending: [3] },
  },
  {
    name: 'Never preempts nothing',
    queues: [{ name: 'a', nominal: cpu(4) }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(4) }],
    pending: [{ id: 2, queue: 'a', requests: cpu(2), priority: 100 }],
    want: { pending: [2] },
  },
  {
    name: 'LowerOrNewerEqualPriority preempts an equal-priority workload created later',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerOrNewerEqualPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), createdAt: 1 },
      { id: 2, queue: 'a', requests: cpu(2), createdAt: 5 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), createdAt: 3 }],
    want: { preempted: { 3: [2] }, pending: [3] },
  },
  {
    name: 'LowerOrNewerEqualPriority leaves older equal-priority workloads alone',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerOrNewerEqualPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2) },
      { id: 2, queue: 'a', requests: cpu(2) },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2) }],
    want: { pending: [3] },
  },
  {
    name: 'victims: lowest priority first, then most recently admitted; no more than needed',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(1), priority: 1, admittedAt: 1 },
      { id: 2, queue: 'a', requests: cpu(1), priority: 0, admittedAt: 2 },
      { id: 3, queue: 'a', requests: cpu(1), priority: 0, admittedAt: 3 },
      { id: 4, queue: 'a', requests: cpu(1), priority: 1, admittedAt: 4 },
    ],
    pending: [{ id: 5, queue: 'a', requests: cpu(2), priority: 5 }],
    want: { preempted: { 5: [3, 2] }, pending: [5] },
  },
  {
    name: 'victims that turn out unnecessary are put back (minimal set)',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(1), admittedAt: 2 },
      { id: 2, queue: 'a', requests: cpu(3), admittedAt: 1 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(3), priority: 5 }],
    want: { preempted: { 3: [2] }, pending: [3] },
  },
  {
    name: 'never preempts unless the preemptor then fits',
    queues: [{ name: 'a', nominal: cpu(4), within: 'LowerPriority' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(3), priority: 10 },
      { id: 2, queue: 'a', requests: cpu(1), priority: 0 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 5 }],
    want: { pending: [3] },
  },
  {
    name: 'no preemption for a request above nominal, even if borrowing would make it fit',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', within: 'LowerPriority' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [{ id: 1, queue: 'a', requests: cpu(4) }],
    pending: [{ id: 2, queue: 'a', requests: cpu(6), priority: 10 }],
    want: { pending: [2] },
  },
  {
    name: 'preempting inside one’s own queue is allowed while that queue borrows',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', within: 'LowerPriority' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(4), admittedAt: 1 },
      { id: 2, queue: 'a', requests: cpu(4), admittedAt: 2 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(4), priority: 10 }],
    want: { preempted: { 3: [2] }, pending: [3] },
    then: [{ actions: [{ requeue: [2] }], want: { admitted: { 3: cpu(4) }, pending: [2] } }],
  },
  {
    name: 'reclaimWithinCohort Any reclaims lent quota from a borrowing queue, any priority',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'b', requests: cpu(4), priority: 5, admittedAt: 1 },
      { id: 2, queue: 'b', requests: cpu(3), priority: 5, admittedAt: 2 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2) }],
    want: { preempted: { 3: [2] }, pending: [3] },
    then: [{ actions: [{ release: [2] }], want: { admitted: { 3: {} }, pending: [] } }],
  },
  {
    name: 'reclaimWithinCohort LowerPriority spares borrowers of equal or higher priority',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'LowerPriority' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'b', requests: cpu(4), priority: 5 },
      { id: 2, queue: 'b', requests: cpu(3), priority: 5 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 5 }],
    want: { pending: [3] },
  },
  {
    name: 'reclaimWithinCohort LowerPriority reclaims from lower priority',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'LowerPriority' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'b', requests: cpu(4), priority: 1, admittedAt: 2 },
      { id: 2, queue: 'b', requests: cpu(3), priority: 0, admittedAt: 1 },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2), priority: 5 }],
    want: { preempted: { 3: [2] }, pending: [3] },
  },
  {
    name: 'a reclaim candidate is taken only while its queue still borrows',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
      { name: 'd', nominal: cpu(2), cohort: 'c' },
    ],
    admitted: [
      { id: 11, queue: 'b', requests: cpu(2), admittedAt: 2 },
      { id: 12, queue: 'b', requests: cpu(1), admittedAt: 3 },
      { id: 21, queue: 'd', requests: cpu(3), admittedAt: 1 },
    ],
    pending: [{ id: 1, queue: 'a', requests: cpu(4) }],
    // Removing 12 ends b's borrowing, so 11 is no candidate; 21 is, and then 12 is not needed.
    want: { preempted: { 1: [21] }, pending: [1] },
  },
  {
    name: 'no reclaiming when the preemptor’s queue would end above its nominal',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(3) },
      { id: 2, queue: 'b', requests: cpu(5) },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(2) }],
    want: { pending: [3] },
  },
  // borrowWithinCohort: a at its nominal must borrow 2 more; b borrows c's 4 with jobs 2 and 3.
  ...(
    [
      ['without borrowWithinCohort, a job that must borrow does not reclaim', undefined, { pending: [4] }],
      [
        'borrowWithinCohort LowerPriority: a job that must borrow preempts a lower-priority borrower of another queue',
        null,
        { preempted: { 4: [3] }, pending: [4] },
      ],
      ['borrowWithinCohort spares victims above maxPriorityThreshold', -1, { pending: [4] }],
    ] as [string, number | null | undefined, Want][]
  ).map(([name, borrowBelow, want]): Scenario => ({
    name,
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'LowerPriority', borrowBelow },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
      { name: 'c', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(4), priority: 5 },
      { id: 2, queue: 'b', requests: cpu(4), admittedAt: 1 },
      { id: 3, queue: 'b', requests: cpu(4), admittedAt: 2 },
    ],
    pending: [{ id: 4, queue: 'a', requests: cpu(2), priority: 5 }],
    want,
    ...(want.preempted
      ? { then: [{ actions: [{ requeue: [3] }], want: { admitted: { 4: cpu(2) }, pending: [3] } }] }
      : {}),
  })),
  // Below its nominal, a may take a victim above the threshold only if it then fits without borrowing.
  ...(
    [
      [
        'borrowWithinCohort below nominal: victims under the threshold let it borrow',
        3,
        { preempted: { 4: [3] }, pending: [4] },
      ],
      ['borrowWithinCohort below nominal: a victim at the threshold forbids borrowing', 0, { pending: [4] }],
    ] as [string, number, Want][]
  ).map(([name, borrowBelow, want]): Scenario => ({
    name,
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any', borrowBelow },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
      { name: 'c', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(3), priority: 5 },
      { id: 2, queue: 'b', requests: cpu(4), priority: 1, admittedAt: 1 },
      { id: 3, queue: 'b', requests: cpu(4), priority: 1, admittedAt: 2 },
      { id: 5, queue: 'c', requests: cpu(1), priority: 9 },
    ],
    pending: [{ id: 4, queue: 'a', requests: cpu(2), priority: 5 }],
    want,
  })),
  {
    name: 'candidates from other queues go before the preemptor’s own',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', within: 'LowerPriority', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(2), admittedAt: 3 },
      { id: 2, queue: 'b', requests: cpu(4), priority: 9, admittedAt: 1 },
      { id: 3, queue: 'b', requests: cpu(2), priority: 9, admittedAt: 2 },
    ],
    pending: [{ id: 4, queue: 'a', requests: cpu(2), priority: 5 }],
    want: { preempted: { 4: [3] }, pending: [4] },
  },
  {
    name: 'fair share: at equal priority the project with the least dominant share goes first',
    queues: [{ name: 'a', nominal: cpu(10) }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(4), project: 'x' }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(1), project: 'x' },
      { id: 3, queue: 'a', requests: cpu(1), project: 'x' },
      { id: 4, queue: 'a', requests: cpu(1), project: 'y' },
    ],
    want: { admitted: { 4: {}, 2: {}, 3: {} }, order: [4, 2, 3], pending: [] },
  },
  {
    name: 'fair share: weights divide the share',
    queues: [{ name: 'a', nominal: cpu(10) }],
    weights: { x: 2 },
    admitted: [
      { id: 1, queue: 'a', requests: cpu(4), project: 'x' },
      { id: 2, queue: 'a', requests: cpu(3), project: 'y' },
    ],
    pending: [
      { id: 3, queue: 'a', requests: cpu(1), project: 'y' },
      { id: 4, queue: 'a', requests: cpu(1), project: 'x' },
    ],
    want: { admitted: { 3: {}, 4: {} }, order: [4, 3], pending: [] },
  },
  {
    name: 'fair share: a project with many jobs does not starve one with a single job',
    queues: [{ name: 'a', nominal: cpu(4) }],
    pending: [
      ...Array.from({ length: 100 }, (_, i) => ({ id: i + 1, queue: 'a', requests: cpu(1), project: 'x' })),
      { id: 101, queue: 'a', requests: cpu(1), project: 'y' },
    ],
    want: {
      admitted: { 1: {}, 101: {}, 2: {}, 3: {} },
      order: [1, 101, 2, 3],
      pending: Array.from({ length: 97 }, (_, i) => i + 4),
    },
  },
  {
    name: 'priority beats fair share',
    queues: [{ name: 'a', nominal: cpu(2) }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(1), project: 'x' }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(1), project: 'x', priority: 1 },
      { id: 3, queue: 'a', requests: cpu(1), project: 'y' },
    ],
    want: { admitted: { 2: {} }, pending: [3] },
  },
  {
    name: 'Hold admits nothing new; None resumes',
    queues: [{ name: 'a', nominal: cpu(4), stop: 'Hold' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(1) }],
    pending: [{ id: 2, queue: 'a', requests: cpu(1) }],
    want: { admitted: {}, drained: [], pending: [2] },
    then: [
      { actions: [{ upsert: { name: 'a', nominal: cpu(4) } }], want: { admitted: { 2: {} }, pending: [] } },
    ],
  },
  {
    name: 'HoldAndDrain drains every admitted workload once and admits nothing',
    queues: [{ name: 'a', nominal: cpu(4), stop: 'HoldAndDrain' }],
    admitted: [
      { id: 1, queue: 'a', requests: cpu(1) },
      { id: 2, queue: 'a', requests: cpu(1) },
    ],
    pending: [{ id: 3, queue: 'a', requests: cpu(1) }],
    want: { admitted: {}, drained: [1, 2], pending: [3] },
    then: [
      { actions: [], want: { drained: [], pending: [3] } },
      { actions: [{ requeue: [1, 2] }], want: { drained: [], admitted: {}, pending: [1, 2, 3] } },
      {
        actions: [{ upsert: { name: 'a', nominal: cpu(4) } }],
        want: { admitted: { 1: {}, 2: {}, 3: {} }, order: [1, 2, 3], pending: [] },
      },
    ],
  },
  {
    name: 'a workload whose queue does not exist waits, and goes once the queue is created',
    queues: [{ name: 'a', nominal: cpu(4) }],
    pending: [{ id: 1, queue: 'gpu', requests: { 'nvidia.com/gpu': 1 } }],
    want: { admitted: {}, pending: [1] },
    then: [
      {
        actions: [{ upsert: { name: 'gpu', nominal: { 'nvidia.com/gpu': 2 } } }],
        want: { admitted: { 1: {} }, pending: [] },
      },
    ],
  },
  {
    name: 'a removed queue keeps its pending workloads until it is back',
    queues: [{ name: 'a', nominal: cpu(1) }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(1) }],
    pending: [{ id: 2, queue: 'a', requests: cpu(1) }],
    want: { admitted: {}, pending: [2] },
    then: [
      { actions: [{ remove: 'a' }, { release: [1] }], want: { admitted: {}, pending: [2] } },
      { actions: [{ upsert: { name: 'a', nominal: cpu(1) } }], want: { admitted: { 2: {} }, pending: [] } },
    ],
  },
  {
    name: 'StrictFIFO head may preempt, and then goes first',
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'StrictFIFO', within: 'LowerPriority' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(4) }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(3), priority: 3 },
      { id: 3, queue: 'a', requests: cpu(1), priority: 1 },
    ],
    want: { preempted: { 2: [1] }, pending: [2, 3] },
    then: [
      { actions: [{ requeue: [1] }], want: { admitted: { 2: {}, 3: {} }, order: [2, 3], pending: [1] } },
    ],
  },
  {
    name: 'fair share at equal share: the project never served goes before one with a backlog (jobs: 1)',
    queues: [{ name: 'a', nominal: { jobs: 1 } }],
    admitted: [{ id: 1, queue: 'a', requests: {}, project: 'x' }],
    pending: [
      ...range(2, 20).map((id) => ({ id, queue: 'a', requests: {}, project: 'x' })),
      { id: 21, queue: 'a', requests: {}, project: 'y' },
    ],
    want: { admitted: {}, pending: range(2, 21), positions: { 21: 1, 2: 2, 3: 3, 20: 20 } },
    then: [
      // Once x's job ends both projects use nothing: y, never served, goes first, as its position said.
      {
        actions: [{ release: [1] }],
        want: { admitted: { 21: {} }, pending: range(2, 20), positions: { 2: 1 } },
      },
      { actions: [{ release: [21] }], want: { admitted: { 2: {} }, pending: range(3, 20) } },
      { actions: [{ release: [2] }], want: { admitted: { 3: {} }, pending: range(4, 20) } },
    ],
  },
  {
    name: 'fair share at equal share: projects take turns, least recently served first, as positions say',
    queues: [{ name: 'a', nominal: { jobs: 1 } }],
    admitted: [{ id: 1, queue: 'a', requests: {}, project: 'x' }],
    pending: [
      ...[2, 3, 4].map((id) => ({ id, queue: 'a', requests: {}, project: 'x' })),
      ...[21, 22].map((id) => ({ id, queue: 'a', requests: {}, project: 'y' })),
    ],
    want: { admitted: {}, pending: [2, 3, 4, 21, 22], positions: { 21: 1, 2: 2, 22: 3, 3: 4, 4: 5 } },
    then: [
      { actions: [{ release: [1] }], want: { admitted: { 21: {} }, pending: [2, 3, 4, 22] } },
      { actions: [{ release: [21] }], want: { admitted: { 2: {} }, pending: [3, 4, 22] } },
      // Both use nothing again; y was served after x, so x's older job 3 waits for y's 22.
      { actions: [{ release: [2] }], want: { admitted: { 22: {} }, pending: [3, 4] } },
      { actions: [{ release: [22] }], want: { admitted: { 3: {} }, pending: [4] } },
    ],
  },
  {
    name: 'reclaim: quota freed by the first victim stays with the preemptor until the last one stops',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [1, 2, 3, 4].map((id) => ({ id, queue: 'b', requests: cpu(2), admittedAt: id })),
    pending: [{ id: 5, queue: 'a', requests: cpu(4) }],
    want: { preempted: { 5: [4, 3] }, pending: [5] },
    then: [
      // 3 stopped: it waits, its 2 cpu are kept for 5 (not borrowed again by 3 itself).
      { actions: [{ requeue: [3] }], want: { admitted: {}, pending: [3, 5] } },
      { actions: [], want: { admitted: {}, pending: [3, 5] } },
      { actions: [{ requeue: [4] }], want: { admitted: { 5: {} }, order: [5], pending: [3, 4] } },
      // No second preemption for 5, no victim back before it.
      { actions: [], want: { admitted: {}, pending: [3, 4] } },
      {
        actions: [{ release: [5] }],
        want: { admitted: { 3: cpu(2), 4: cpu(2) }, order: [3, 4], pending: [] },
      },
    ],
  },
  {
    name: 'reclaim: a victim that ends on its own counts as stopped',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [1, 2, 3, 4].map((id) => ({ id, queue: 'b', requests: cpu(2), admittedAt: id })),
    pending: [
      { id: 5, queue: 'a', requests: cpu(4) },
      { id: 6, queue: 'b', requests: cpu(2) },
    ],
    want: { preempted: { 5: [4, 3] }, pending: [5, 6] },
    then: [
      { actions: [{ release: [3] }], want: { admitted: {}, pending: [5, 6] } },
      { actions: [{ requeue: [4] }], want: { admitted: { 5: {} }, pending: [4, 6] } },
    ],
  },
  {
    name: 'reclaim: a preemptor withdrawn while its victims stop gives the kept quota back',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [1, 2, 3, 4].map((id) => ({ id, queue: 'b', requests: cpu(2), admittedAt: id })),
    pending: [{ id: 5, queue: 'a', requests: cpu(4) }],
    want: { preempted: { 5: [4, 3] }, pending: [5] },
    then: [
      { actions: [{ requeue: [3] }], want: { admitted: {}, pending: [3, 5] } },
      { actions: [{ withdraw: [5] }], want: { admitted: { 3: cpu(2) }, pending: [] } },
      { actions: [{ requeue: [4] }], want: { admitted: { 4: cpu(2) }, pending: [] } },
    ],
  },
  {
    name: 'preemption within a queue: another queue of the cohort cannot borrow what the victims free',
    queues: [
      { name: 'pw', nominal: cpu(4), cohort: 'cw', within: 'LowerPriority' },
      { name: 'xq', nominal: cpu(1), cohort: 'cw' },
    ],
    admitted: [
      { id: 1, queue: 'xq', requests: cpu(1), admittedAt: 1 },
      { id: 2, queue: 'pw', requests: cpu(2), admittedAt: 2 },
      { id: 3, queue: 'pw', requests: cpu(1), admittedAt: 3 },
      { id: 4, queue: 'pw', requests: cpu(1), admittedAt: 4 },
    ],
    pending: [
      { id: 5, queue: 'xq', requests: cpu(2) },
      { id: 6, queue: 'pw', requests: cpu(3), priority: 10 },
    ],
    want: { admitted: {}, preempted: { 6: [4, 2] }, pending: [5, 6] },
    then: [
      // 2 stopped: 5 would fit in the 2 cpu it freed, but they are kept for 6.
      { actions: [{ requeue: [2] }], want: { admitted: {}, pending: [2, 5, 6] } },
      { actions: [{ requeue: [4] }], want: { admitted: { 6: {} }, order: [6], pending: [2, 4, 5] } },
      { actions: [{ release: [6] }], want: { admitted: { 2: {}, 4: {} }, order: [2, 4], pending: [5] } },
    ],
  },
  {
    name: 'a second preemptor in the cohort waits rather than take room the first one counts on',
    queues: [
      { name: 'q0', nominal: cpu(1), cohort: 'c', reclaim: 'LowerPriority' },
      { name: 'q1', nominal: cpu(2), cohort: 'c', within: 'LowerPriority' },
    ],
    admitted: [
      { id: 1, queue: 'q1', requests: cpu(2), admittedAt: 1 },
      { id: 2, queue: 'q1', requests: cpu(1), admittedAt: 2 },
    ],
    pending: [
      { id: 3, queue: 'q0', requests: cpu(1), priority: 1 },
      { id: 4, queue: 'q1', requests: cpu(1), priority: 1 },
    ],
    // 4 could evict 1 and fit once 1 has stopped, but until then its request would take the room
    // 3 needs once 2 has stopped: if 2 stopped first, 3 would not fit.
    want: { preempted: { 3: [2] }, pending: [3, 4] },
    then: [
      { actions: [{ requeue: [2] }], want: { admitted: { 3: {} }, preempted: { 4: [1] }, pending: [2, 4] } },
      { actions: [{ requeue: [1] }], want: { admitted: { 4: {}, 2: {} }, order: [4, 2], pending: [1] } },
    ],
  },
  {
    name: 'a preemptor keeps the free quota it counted on while its victims stop',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', reclaim: 'Any' },
      { name: 'b', nominal: cpu(2), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'b', requests: cpu(2), admittedAt: 1 },
      { id: 2, queue: 'b', requests: cpu(2), admittedAt: 2 },
    ],
    pending: [
      { id: 3, queue: 'a', requests: cpu(4) },
      { id: 4, queue: 'b', requests: cpu(1) },
    ],
    // 3 needs the 2 cpu free now and the 2 its victim frees: 4 may not take the free ones meanwhile.
    want: { admitted: {}, preempted: { 3: [2] }, pending: [3, 4] },
    then: [
      { actions: [{ requeue: [2] }], want: { admitted: { 3: {} }, pending: [2, 4] } },
      {
        actions: [{ release: [3] }],
        want: { admitted: { 2: cpu(2), 4: cpu(1) }, order: [2, 4], pending: [] },
      },
    ],
  },
  // Backfill: admitted at ~0 ms (their id), the pass at 1 s; timeouts in seconds.
  {
    name: 'Backfill: a short job starts ahead of a blocked wide one; a job that would delay it waits',
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'Backfill' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3), timeout: 100 }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(4), timeout: 100 },
      // Fits now, but would still hold its cpu when 2 is due to start (BestEffortFIFO admits it).
      { id: 3, queue: 'a', requests: cpu(1), timeout: 200 },
      { id: 4, queue: 'a', requests: cpu(1), timeout: 50 },
    ],
    want: { admitted: { 4: {} }, pending: [2, 3] },
    then: [
      // 2 now waits for 4, whose timeout is up at 51 s: 3 would still run then.
      { actions: [{ release: [1] }], want: { admitted: {}, pending: [2, 3] } },
      { actions: [{ release: [4] }], want: { admitted: { 2: {} }, pending: [3] } },
    ],
  },
  {
    name: 'Backfill: a job without a timeout only takes what the reservation leaves',
    queues: [{ name: 'a', nominal: cpu(10), strategy: 'Backfill' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(6), timeout: 100 }],
    pending: [
      // Reserved at 100 s: 8 of 10, so 2 are left then.
      { id: 2, queue: 'a', requests: cpu(8), timeout: 100 },
      { id: 3, queue: 'a', requests: cpu(3) },
      { id: 4, queue: 'a', requests: cpu(1) },
      { id: 5, queue: 'a', requests: cpu(1) },
      // Nothing left, but 2 cpu free now: only a job done by 100 s may take them.
      { id: 6, queue: 'a', requests: cpu(1), timeout: 1000 },
      { id: 7, queue: 'a', requests: cpu(1), timeout: 50 },
    ],
    want: { admitted: { 4: {}, 5: {}, 7: {} }, order: [4, 5, 7], pending: [2, 3, 6] },
  },
  {
    name: 'Backfill: a higher-priority arrival goes first; the reservation is then planned anew',
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'Backfill' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(2), timeout: 100 }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(4), timeout: 10 },
      { id: 3, queue: 'a', requests: cpu(2), timeout: 200 },
    ],
    want: { admitted: {}, pending: [2, 3] },
    then: [
      {
        actions: [{ enqueue: [{ id: 4, queue: 'a', requests: cpu(2), priority: 5, timeout: 500 }] }],
        want: { admitted: { 4: {} }, pending: [2, 3] },
      },
    ],
  },
  {
    name: 'Backfill with learned estimates plans with predicted runtimes, timeouts where there are none, and a misprediction may delay the head an hour at most',
    queues: [{ name: 'a', nominal: cpu(5), strategy: 'Backfill', estimates: 'learned' }],
    // Predicted to end at 20 s, not at its 100 s timeout: 2 is reserved to start then.
    admitted: [{ id: 1, queue: 'a', requests: cpu(3), timeout: 100, expected: 20 }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(5), timeout: 100 },
      // Predicted done by 11 s: it goes (with requested times it would not, by its timeout).
      { id: 3, queue: 'a', requests: cpu(1), timeout: 200, expected: 10 },
      // Its timeout is up at 31 s, after 20 s: it waits (with requested times it would go).
      { id: 4, queue: 'a', requests: cpu(1), timeout: 30 },
      // Predicted done by 11 s too, but by its timeout it could hold its cpu for 3 hours, past
      // the hour (MISPREDICTION_SLACK_MS) after 100 s, when the timeouts alone reserve 2: it waits.
      { id: 5, queue: 'a', requests: cpu(1), timeout: 10_800, expected: 10 },
    ],
    want: { admitted: { 3: {} }, pending: [2, 4, 5] },
    then: [
      {
        actions: [{ upsert: { name: 'a', nominal: cpu(5), strategy: 'Backfill' } }],
        want: { admitted: { 4: {} }, pending: [2, 5] },
      },
    ],
  },
  {
    name: 'Backfill with learned estimates backfills the shortest predicted first (SJBF), but not past a job that has waited 16 hours',
    queues: [{ name: 'a', nominal: cpu(5), strategy: 'Backfill', estimates: 'learned' }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3), timeout: 100, expected: 20 }],
    pending: [
      { id: 2, queue: 'a', requests: cpu(5), timeout: 100, createdAt: -18 * 3600_000 },
      // All end before 2's reservation at 20 s; there are two cpu. 3 was created 17 hours before
      // the pass (SJBF_AGED_MS is 16): it goes first; then of 4 and 5 the shorter.
      { id: 3, queue: 'a', requests: cpu(1), timeout: 30, expected: 15, createdAt: -17 * 3600_000 },
      { id: 4, queue: 'a', requests: cpu(1), timeout: 30, expected: 10 },
      { id: 5, queue: 'a', requests: cpu(1), timeout: 30, expected: 5 },
    ],
    want: { admitted: { 3: {}, 5: {} }, order: [3, 5], pending: [2, 4] },
  },
  // Conservative backfilling (backfill.reservations above 1): the same jobs, one reservation or two.
  ...[1, 2].map((reservations): Scenario => ({
    name: `Backfill with ${reservations} reservation(s): a job that fits what the first leaves ${reservations === 1 ? 'goes (EASY)' : 'waits, as it would delay the second; a shorter one goes'}`,
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'Backfill', reservations }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3), timeout: 100 }],
    pending: [
      // Reserved at 100 s, until 200 s: it leaves 1 cpu then.
      { id: 2, queue: 'a', requests: cpu(3), timeout: 100 },
      // With two reservations, reserved at 200 s (at 100 s only 1 cpu is left): it leaves none.
      { id: 3, queue: 'a', requests: cpu(4), timeout: 100 },
      // Fits the cpu free now and the one 2 leaves, but would still run at 200 s.
      { id: 4, queue: 'a', requests: cpu(1), timeout: 500 },
      // Done by 151 s: it delays neither.
      { id: 5, queue: 'a', requests: cpu(1), timeout: 150 },
    ],
    want:
      reservations === 1
        ? { admitted: { 4: {} }, pending: [2, 3, 5] }
        : { admitted: { 5: {} }, pending: [2, 3, 4] },
  })),
  {
    name: 'Backfill with 2 reservations: a job ahead of the second that starts now is not held back by it; the second is planned around it',
    queues: [{ name: 'a', nominal: cpu(4), strategy: 'Backfill', reservations: 2 }],
    admitted: [{ id: 1, queue: 'a', requests: cpu(3), timeout: 100 }],
    pending: [
      // Reserved at 100 s, until 200 s; it leaves 1 cpu.
      { id: 2, queue: 'a', requests: cpu(3), timeout: 100 },
      // Fits now and what 2 leaves: it starts, and holds its cpu until 1001 s.
      { id: 3, queue: 'a', requests: cpu(1), timeout: 1000 },
      // Planned with 3 running: reserved at 200 s on the 3 cpu 3 leaves, none left then.
      { id: 4, queue: 'a', requests: cpu(3), timeout: 100 },
    ],
    want: { admitted: { 3: {} }, pending: [2, 4] },
    then: [
      // 2 starts once 1 ends; 4 is the first reservation then.
      { actions: [{ release: [1] }], want: { admitted: { 2: {} }, pending: [4] } },
    ],
  },
  {
    name: 'Backfill in a cohort: what other members release counts toward the reservation',
    queues: [
      { name: 'a', nominal: cpu(4), cohort: 'c', strategy: 'Backfill' },
      { name: 'b', nominal: cpu(4), cohort: 'c' },
    ],
    admitted: [
      { id: 1, queue: 'b', requests: cpu(4), timeout: 100 },
      { id: 2, queue: 'a', requests: cpu(2), timeout: 300 },
    ],
    pending: [
      // Fits once 1 has released b's quota, at 100 s (not at 300 s, when a's own 2 ends).
      { id: 3, queue: 'a', requests: cpu(6), timeout: 100 },
      { id: 4, queue: 'a', requests: cpu(1), timeout: 200 },
      { id: 5, queue: 'a', requests: cpu(1), timeout: 50 },
    ],
    want: { admitted: { 5: {} }, pending: [3, 4] },
  },
];

const amounts = (q: Quantities): Record<string, number> => parseAmounts(q, 'want');

function check(s: Scheduler, decisions: Decision[], want: Want, queues: string[], step: string): void {
  const admits = decisions.filter((d) => d.kind === 'admit');
  if (want.admitted !== undefined) {
    const got = Object.fromEntries(admits.map((d) => [d.id, d.borrowed]));
    const expected = Object.fromEntries(Object.entries(want.admitted).map(([id, b]) => [id, amounts(b)]));
    assert.deepEqual(got, expected, `${step}: admitted`);
  }
  if (want.order !== undefined) {
    assert.deepEqual(
      admits.map((d) => d.id),
      want.order,
      `${step}: admission order`,
    );
  }
  const preempts = decisions.filter((d) => d.kind === 'preempt');
  const gotPreempted = Object.fromEntries(preempts.map((d) => [d.preemptor, d.victims]));
  assert.deepEqual(gotPreempted, want.preempted ?? {}, `${step}: preempted`);
  if (want.drained !== undefined) {
    assert.deepEqual(
      decisions.filter((d) => d.kind === 'drain').map((d) => d.id),
      want.drained,
      `${step}: drained`,
    );
  }
  const pending = queues.flatMap((q) => s.pendingIds(q, 0, 1_000_000)).sort((a, b) => a - b);
  assert.deepEqual(pending, want.pending, `${step}: pending`);
  for (const [id, position] of Object.entries(want.positions ?? {})) {
    assert.equal(s.explain(Number(id))?.position, position, `${step}: position of ${id}`);
  }
}

for (const sc of scenarios) {
  test(sc.name, () => {
    const s = new Scheduler();
    for (const q of sc.queues) s.upsertQueue(queueModel(q));
    for (const [project, weight] of Object.entries(sc.weights ?? {})) s.setProjectWeight(project, weight);
    for (const a of sc.admitted ?? []) s.restoreAdmitted(admittedWorkload(a));
    for (const p of sc.pending) s.enqueue(workload(p));
    const queues = [...new Set([...sc.queues.map((q) => q.name), ...sc.pending.map((p) => p.queue)])];
    let now = 1000;
    check(s, s.schedule(now), sc.want, queues, 'first pass');
    for (const [i, step] of (sc.then ?? []).entries()) {
      for (const a of step.actions) {
        if ('release' in a) a.release.forEach((id) => s.release(id));
        else if ('requeue' in a) a.requeue.forEach((id) => s.requeue(id));
        else if ('enqueue' in a) a.enqueue.forEach((w) => s.enqueue(workload(w)));
        else if ('withdraw' in a) a.withdraw.forEach((id) => assert.ok(s.withdraw(id), `withdraw ${id}`));
        else if ('upsert' in a) s.upsertQueue(queueModel(a.upsert));
        else s.removeQueue(a.remove);
      }
      check(s, s.schedule(++now), step.want, queues, `pass ${i + 2}`);
    }
  });
}

test('the table has at least 25 scenarios', () => {
  assert.ok(scenarios.length >= 25, `${scenarios.length} scenarios`);
});
