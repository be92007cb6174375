/** Cluster queues: pools of quota that projects draw on (Kueue's ClusterQueue). */
import type { Amounts } from './quantity.js';

/**
 * Kueue's two, and Backfill (EASY backfilling, as Slurm's sched/backfill): the first workload that
 * does not fit holds a reservation, and later ones start only when they cannot delay it.
 */
export const QUEUEING_STRATEGIES = ['StrictFIFO', 'BestEffortFIFO', 'Backfill'] as const;
export type QueueingStrategy = (typeof QUEUEING_STRATEGIES)[number];

/**
 * What a Backfill queue plans with: `requested`, the jobs' timeouts (EASY); `learned`, also what
 * berth's runtime history predicts, where it predicts a job ends sooner (EASY++).
 */
export const RUNTIME_ESTIMATES = ['requested', 'learned'] as const;
export type RuntimeEstimates = (typeof RUNTIME_ESTIMATES)[number];

/**
 * How many reservations a pass of a Backfill queue keeps (Slurm's `bf_max_job_test`): 1 is EASY;
 * as many as the jobs ahead, conservative backfilling. Capped so that a pass stays cheap.
 */
export const MAX_BACKFILL_RESERVATIONS = 100;

export interface BackfillOptions {
  /** The first this many pending jobs that cannot start now each hold a reservation (default 1). */
  reservations: number;
}

export const WITHIN_CLUSTER_QUEUE = ['Never', 'LowerPriority', 'LowerOrNewerEqualPriority'] as const;
export type WithinClusterQueue = (typeof WITHIN_CLUSTER_QUEUE)[number];

export const RECLAIM_WITHIN_COHORT = ['Never', 'LowerPriority', 'Any'] as const;
export type ReclaimWithinCohort = (typeof RECLAIM_WITHIN_COHORT)[number];

export const STOP_POLICIES = ['None', 'Hold', 'HoldAndDrain'] as const;
export type StopPolicy = (typeof STOP_POLICIES)[number];

export const BORROW_WITHIN_COHORT = ['Never', 'LowerPriority'] as const;

/** Whether this queue's interactive jobs (`berth run -it`: a person at a terminal) may be preempted. */
export const INTERACTIVE_PREEMPTION = ['Never', 'Allowed'] as const;
export type InteractivePreemption = (typeof INTERACTIVE_PREEMPTION)[number];
export type BorrowWithinCohortPolicy = (typeof BORROW_WITHIN_COHORT)[number];

/**
 * Kueue's borrowWithinCohort: a job that must borrow may preempt, in other queues of its cohort
 * that borrow, jobs of lower priority — and only those at or below `maxPriorityThreshold` when it
 * is set.
 */
export interface BorrowWithinCohort {
  policy: BorrowWithinCohortPolicy;
  maxPriorityThreshold: number | null;
}

export interface Preemption {
  withinClusterQueue: WithinClusterQueue;
  reclaimWithinCohort: ReclaimWithinCohort;
  /** Absent in queues made before it existed: Never. */
  borrowWithinCohort?: BorrowWithinCohort;
  /**
   * Whether its admitted interactive jobs are candidates for preemption, by this queue's jobs or
   * by its cohort's reclaim: a person's shell is not cut for a batch job unless the queue says
   * so. Absent (queues made before it): Never.
   */
  interactive?: InteractivePreemption;
}

/** What an admin says about a queue; quantities kept as written ("16Gi"). */
export interface ClusterQueueSpec {
  name: string;
  /** Nominal quota per resource. Resources a queue does not name are not limited by it. */
  quota: Record<string, string>;
  cohort: string | null;
  /** Per resource: how far above nominal this queue may go by borrowing from its cohort. */
  borrowingLimit: Record<string, string>;
  /** Per resource: how much of its nominal quota others in the cohort may borrow. */
  lendingLimit: Record<string, string>;
  queueingStrategy: QueueingStrategy;
  /** Backfill: what jobs are planned with. Absent (in queues that never set it): requested. */
  estimates?: RuntimeEstimates;
  /** Backfill: how many reservations a pass keeps. Absent: one (EASY). */
  backfill?: BackfillOptions;
  preemption: Preemption;
  stopPolicy: StopPolicy;
  /**
   * Each project's `maxQueued` unless it sets its own: the most of its jobs queued here at once.
   * Absent or null: no limit.
   */
  maxQueuedPerProject?: number | null;
}

export interface ClusterQueue extends ClusterQueueSpec {
  createdAt: string;
  updatedAt: string;
}

export const DEFAULT_PREEMPTION: Preemption = {
  withinClusterQueue: 'Never',
  reclaimWithinCohort: 'Never',
  borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
};

/** The implicit request of every job, so that a quota on `jobs` caps concurrency. */
export const JOBS_RESOURCE = 'jobs';

/** A queue's quota as integer amounts, ready for the scheduler. */
export interface QueueAmounts {
  nominal: Amounts;
  borrowingLimit: Amounts;
  lendingLimit: Amounts;
}

/** A queue as the API shows it: its spec with the scheduler's live figures (quantities as text). */
export interface ClusterQueueView extends ClusterQueue {
  usage: Record<string, string>;
  borrowed: Record<string, string>;
  pending: number;
  /** Jobs holding quota… */
  admitted: number;
  /** …and of those, how many have started. */
  running: number;
}
