/** Small builders for scheduler tests: queues and workloads written as data. */
import { parseAmounts, type QuantityInput } from '../../src/domain/quantity.js';
import type { Preemption } from '../../src/domain/cluster-queue.js';
import type { AdmittedWorkload, QueueModel, Workload } from '../../src/scheduler/index.js';

export type Quantities = Record<string, QuantityInput>;

export interface QueueSpec {
  name: string;
  nominal: Quantities;
  cohort?: string;
  borrowingLimit?: Quantities;
  lendingLimit?: Quantities;
  strategy?: QueueModel['queueingStrategy'];
  within?: Preemption['withinClusterQueue'];
  reclaim?: Preemption['reclaimWithinCohort'];
  /** borrowWithinCohort LowerPriority, with this maxPriorityThreshold (null: none). */
  borrowBelow?: number | null;
  stop?: QueueModel['stopPolicy'];
  estimates?: QueueModel['estimates'];
  /** Backfill: how many reservations a pass keeps (`backfill.reservations`). */
  reservations?: number;
  /** `preemption.interactive`: whether its interactive workloads may be preempted (absent: Never). */
  interactive?: Preemption['interactive'];
}

export function queueModel(s: QueueSpec): QueueModel {
  return {
    name: s.name,
    cohort: s.cohort ?? null,
    nominal: parseAmounts(s.nominal, 'nominal'),
    borrowingLimit: parseAmounts(s.borrowingLimit ?? {}, 'borrowingLimit'),
    lendingLimit: parseAmounts(s.lendingLimit ?? {}, 'lendingLimit'),
    queueingStrategy: s.strategy ?? 'BestEffortFIFO',
    preemption: {
      withinClusterQueue: s.within ?? 'Never',
      reclaimWithinCohort: s.reclaim ?? 'Never',
      borrowWithinCohort:
        s.borrowBelow === undefined
          ? { policy: 'Never', maxPriorityThreshold: null }
          : { policy: 'LowerPriority', maxPriorityThreshold: s.borrowBelow },
      ...(s.interactive === undefined ? {} : { interactive: s.interactive }),
    },
    stopPolicy: s.stop ?? 'None',
    ...(s.estimates === undefined ? {} : { estimates: s.estimates }),
    ...(s.reservations === undefined ? {} : { backfill: { reservations: s.reservations } }),
  };
}

export interface WorkloadSpec {
  id: number;
  queue: string;
  requests: Quantities;
  priority?: number;
  project?: string;
  /** Defaults to the id, so that ids order submissions. */
  createdAt?: number;
  /** Seconds it may run once admitted (what Backfill plans with); absent: no timeout. */
  timeout?: number;
  /** Seconds it is predicted to run (what Backfill plans with under `estimates: learned`). */
  expected?: number;
  /** A person's terminal (`berth run -it`). */
  interactive?: boolean;
}

export function workload(s: WorkloadSpec): Workload {
  return {
    id: s.id,
    queue: s.queue,
    project: s.project ?? 'p',
    priority: s.priority ?? 0,
    createdAt: s.createdAt ?? s.id,
    requests: { jobs: 1, ...parseAmounts(s.requests, 'requests') },
    ...(s.timeout === undefined ? {} : { timeoutMs: s.timeout * 1000 }),
    ...(s.expected === undefined ? {} : { expectedMs: s.expected * 1000 }),
    ...(s.interactive ? { interactive: true } : {}),
  };
}

export interface AdmittedSpec extends WorkloadSpec {
  admittedAt?: number;
}

export function admittedWorkload(s: AdmittedSpec): AdmittedWorkload {
  return { ...workload(s), admittedAt: s.admittedAt ?? s.id, borrowed: {} };
}
