/**
 * One workload, pending or admitted, as a single object: while pending it is a node of its lane's
 * treap (lane-tree.ts); once admitted, the same object is the record of the quota it holds, and a
 * requeue puts it back in its lane. One object per job keeps the heap small and spares the
 * garbage collector, and tree walks compare keys without another pointer to follow.
 */
import type { Amounts } from '../domain/quantity.js';
import type { OrderKey } from './ordering.js';
import type { Holder } from './quota.js';
import type { Vec } from './resources.js';
import type { JobId, Workload } from './types.js';

const NOTHING: Amounts = Object.freeze({});

export class WorkloadNode implements OrderKey {
  readonly id: JobId;
  readonly queue: string;
  readonly project: string;
  readonly priority: number;
  readonly createdAt: number;
  /** How long it may run once admitted, ms (Infinity: unknown). See backfill.ts. */
  readonly timeoutMs: number;
  /** How long it is predicted to run, ms, never above the timeout (Infinity: unknown). */
  readonly predictedMs: number;

  // ---- while pending: treap node and its subtree aggregates (see lane-tree.ts)
  left: WorkloadNode | null = null;
  right: WorkloadNode | null = null;
  size = 1;
  /** Capacity epoch in which this workload was last found inadmissible (0: never). */
  parkedAt = 0;
  minParked = 0;
  first: WorkloadNode = this;
  /**
   * Subtree minimum request of resources 0–3 inline (the hot path reads a child's fields rather
   * than follow two more pointers), and of resources 4 and up in `minRest` (null: none).
   */
  m0 = 0;
  m1 = 0;
  m2 = 0;
  m3 = 0;
  minRest: Vec | null = null;
  /** Subtree minimum of `timeoutMs` and of `predictedMs`: what a Backfill search prunes by. */
  minTimeout: number;
  minPredicted: number;
  /** Subtree total request; leaves share `req`. */
  sum: Vec;
  sumStale = false;
  /** Set while this workload waits for the victims it preempted to stop. */
  waitingFor: Set<JobId> | null = null;

  // ---- while admitted
  /**
   * The queue whose quota it holds; null while pending. Typed by what quota accounting needs of
   * it: the queue's own module names it `AdmittedNode` (queue-state.ts), so that this leaf does
   * not import the queue that imports it.
   */
  holder: Holder | null = null;
  admittedAt = 0;
  /** Admission sequence, to order equal `admittedAt`s ("most recently admitted" for victims). */
  seq = 0;
  borrowed: Amounts = NOTHING;
  /** Being stopped: it keeps its quota, but is no candidate for further preemption or draining. */
  evicting: 'preempted' | 'drained' | null = null;
  /** For a victim: the workload it was preempted for. */
  preemptor: JobId | null = null;

  /** The workload's fields are copied, so that a caller changing its object cannot corrupt the order. */
  constructor(
    w: Workload,
    readonly req: Vec,
    readonly pri: number,
  ) {
    this.id = w.id;
    this.queue = w.queue;
    this.project = w.project;
    this.priority = w.priority;
    this.createdAt = w.createdAt;
    this.timeoutMs = w.timeoutMs ?? Infinity;
    this.predictedMs = Math.min(w.expectedMs ?? Infinity, this.timeoutMs);
    this.minTimeout = this.timeoutMs;
    this.minPredicted = this.predictedMs;
    this.m0 = req[0] ?? 0;
    this.m1 = req[1] ?? 0;
    this.m2 = req[2] ?? 0;
    this.m3 = req[3] ?? 0;
    this.minRest = req.length > 4 ? req.slice(4) : null;
    this.sum = req;
  }

  /** Back to the pending state, e.g. after an eviction. */
  resetAdmission(): void {
    this.holder = null;
    this.admittedAt = 0;
    this.seq = 0;
    this.borrowed = NOTHING;
    this.evicting = null;
    this.preemptor = null;
    this.parkedAt = 0;
    this.waitingFor = null;
  }
}

/** A workload that holds quota of `Q` (queue-state.ts: `AdmittedNode`, of a QueueState). */
export type Admitted<Q extends Holder> = WorkloadNode & { holder: Q };

export function markAdmitted<Q extends Holder>(
  n: WorkloadNode,
  holder: Q,
  admittedAt: number,
  seq: number,
  borrowed: Amounts,
): Admitted<Q> {
  n.holder = holder;
  n.admittedAt = admittedAt;
  n.seq = seq;
  n.borrowed = borrowed;
  n.evicting = null;
  n.preemptor = null;
  n.waitingFor = null;
  return n as Admitted<Q>;
}
