/**
 * The contract between the pure scheduler and the controller that drives it.
 *
 * The scheduler is a deterministic, in-memory model: no I/O, no clock of its own (time is passed
 * in), no database. The controller feeds it queues and workloads (on start, rebuilt from the
 * store) and carries out its decisions. Amounts are integers (see domain/quantity.ts): `cpu` in
 * millicores, everything else in whole units; every workload's `requests` already include the
 * implicit `jobs: 1`.
 */
import type {
  BackfillOptions,
  Preemption,
  QueueingStrategy,
  RuntimeEstimates,
  StopPolicy,
} from '../domain/cluster-queue.js';
import type { Amounts } from '../domain/quantity.js';
import type { Blocker } from '../domain/blocker.js';

/** A job's id: the store's sequential integer, so it also orders submissions. */
export type JobId = number;

export interface QueueModel {
  name: string;
  cohort: string | null;
  /** Nominal quota. A resource the queue does not name is not limited by this queue. */
  nominal: Amounts;
  /** Per resource: max usage above nominal. Absent: no limit beyond what the cohort can lend. */
  borrowingLimit: Amounts;
  /** Per resource: max of its nominal others may borrow. Absent: all of it. */
  lendingLimit: Amounts;
  queueingStrategy: QueueingStrategy;
  /** Backfill: what jobs are planned with (absent: requested, their timeouts). See backfill.ts. */
  estimates?: RuntimeEstimates;
  /** Backfill: how many reservations a pass keeps (absent: one, EASY). See conservative.ts. */
  backfill?: BackfillOptions;
  preemption: Preemption;
  stopPolicy: StopPolicy;
  /** Not the scheduler's: the submission limit per project it carries for the API (null: none). */
  maxQueuedPerProject?: number | null;
}

export interface Workload {
  id: JobId;
  queue: string;
  project: string;
  priority: number;
  /** Submission time (ms). Kept across preemption, so a victim returns to its old place. */
  createdAt: number;
  requests: Amounts;
  /**
   * How long it may run once admitted (ms): its timeout. What Backfill plans with; absent or null:
   * unknown, so it may run for ever.
   */
  timeoutMs?: number | null;
  /**
   * How long it is predicted to run (ms), from the runtimes of jobs like it: what a Backfill queue
   * with `estimates: learned` plans with where it is shorter than the timeout. Absent: no prediction.
   */
  expectedMs?: number | null;
  /**
   * A person's terminal (`berth run -it`): once admitted, a candidate for preemption only where its
   * queue's `preemption.interactive` is Allowed. Absent: a batch job.
   */
  interactive?: boolean;
}

export interface AdmittedWorkload extends Workload {
  admittedAt: number;
  /** Per resource, how much of this workload's request was borrowed from the cohort. */
  borrowed: Amounts;
}

export type Decision =
  /**
   * Admit `id`: its quota is now counted as used. `backfilledAhead`: in a Backfill queue, the job
   * holding the reservation it was admitted ahead of (without delaying it).
   */
  | { kind: 'admit'; id: JobId; queue: string; borrowed: Amounts; backfilledAhead?: JobId }
  /**
   * Evict `victims` so that `preemptor` can be admitted later. The victims keep their quota
   * (state "evicting") until the controller has stopped them and calls `requeue` (or `release`,
   * if one ended on its own). Meanwhile the preemptor's request is reserved: nothing else is
   * admitted into the room it counts on. The pass after its last victim has stopped admits it first.
   */
  | { kind: 'preempt'; preemptor: JobId; victims: JobId[]; reason: string }
  /** HoldAndDrain: evict this admitted workload and put it back in its queue. */
  | { kind: 'drain'; id: JobId; queue: string; reason: string };

/** Why a pending workload waits, for `berth status` and the dashboard. */
export interface Explanation {
  queue: string;
  /** 1-based position in its queue's admission order. */
  position: number;
  /** 1-based position among the pending jobs of its project in that queue. */
  projectPosition: number;
  /** One line a user understands, e.g. "waiting for quota in queue default: cpu 8/8 in use". */
  reason: string;
  blockers: Blocker[];
  /**
   * No pass has weighed it yet (just submitted): said from its place in the queue alone; the next
   * pass may say more (a Backfill queue's reservation for it).
   */
  provisional?: true;
}

/** Defined in the domain so the job view can carry it; re-exported for the scheduler's users. */
export type { Blocker } from '../domain/blocker.js';

export interface QueueFigures {
  usage: Amounts;
  borrowed: Amounts;
  pending: number;
  admitted: number;
  /** Its definition's cohort and quota, as the scheduler holds them (for the metrics). */
  cohort: string | null;
  nominal: Amounts;
  borrowingLimit: Amounts;
  lendingLimit: Amounts;
}

/**
 * A queue's pending workloads by what keeps them (the metrics): `held` while the queue is on hold
 * (its stop policy), else `inadmissible` — what cannot be admitted until quota is released or
 * time moves a reservation (QueueState.inadmissible) — and `active`, the rest, which the next pass
 * looks at.
 */
export interface PendingStatus {
  active: number;
  inadmissible: number;
  held: number;
}

/**
 * The reservations a queue holds now (the metrics): a Backfill queue's, its plan's as of the last
 * pass (BackfillPlans.held), and a preemptor's while its victims stop.
 */
export interface ReservationsHeld {
  backfill: number;
  preemption: number;
}

export interface SchedulerApi {
  /** Adds or replaces a queue's definition; pending and admitted work is kept. */
  upsertQueue(q: QueueModel): void;
  /** Forgets a queue. Its pending workloads stay, waiting with reason "queue missing". */
  removeQueue(name: string): void;
  /** Fair-share weight of a project (default 1). */
  setProjectWeight(project: string, weight: number): void;
  /** A new or returning pending workload. */
  enqueue(w: Workload): void;
  /** Removes a pending workload (cancelled). Returns false if it was not pending. */
  withdraw(id: JobId): boolean;
  /** On restart: a workload that already holds quota. */
  restoreAdmitted(w: AdmittedWorkload): void;
  /** An admitted workload ended: its quota is free again. */
  release(id: JobId): void;
  /** An evicted workload stopped: free its quota and put it back in its queue at its old place. */
  requeue(id: JobId): void;
  /** One scheduling pass; returns at most `max` decisions. */
  schedule(now: number, max?: number): Decision[];
  /** Why `id` is pending, or undefined if it is not pending. */
  explain(id: JobId): Explanation | undefined;
  queueFigures(name: string): QueueFigures | undefined;
  /** The queue's pending workloads by status (metrics; O(k log n) for the k it could admit now). */
  pendingStatus(name: string): PendingStatus | undefined;
  /** The reservations the queue holds now (metrics). */
  reservationsHeld(name: string): ReservationsHeld | undefined;
  /** How many workloads the last pass tried (each a head that was admitted, parked or blocked). */
  passDepth(): number;
  /** Pending ids of a queue in admission order, for `GET /cluster-queues/{name}/pending`. */
  pendingIds(queue: string, offset: number, limit: number): JobId[];
  /** Every workload that holds quota, for a forecast's snapshot (scheduler/forecast.ts). */
  admittedWorkloads(): Iterable<AdmittedWorkload>;
  /** The fair-share weights set (projects not named weigh 1). */
  projectWeights(): Iterable<[string, number]>;
}
