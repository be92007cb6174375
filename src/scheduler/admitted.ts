/** An admitted workload: it holds quota until it is released or requeued. */
import type { Amounts } from '../domain/quantity.js';
import type { QueueState } from './queue-state.js';
import type { Vec } from './resources.js';
import type { JobId, Workload } from './types.js';

export interface AdmittedRec {
  readonly w: Workload;
  readonly req: Vec;
  readonly q: QueueState;
  readonly admittedAt: number;
  /** Admission sequence, to order equal `admittedAt`s ("most recently admitted" for victims). */
  readonly seq: number;
  readonly borrowed: Amounts;
  /** Being stopped: it keeps its quota, but is no candidate for further preemption or draining. */
  evicting: 'preempted' | 'drained' | null;
  /** For a victim: the workload it was preempted for. */
  preemptor: JobId | null;
}

/** Only the fields of a pending workload (an AdmittedWorkload has more). */
export function plainWorkload(w: Workload): Workload {
  return {
    id: w.id,
    queue: w.queue,
    project: w.project,
    priority: w.priority,
    createdAt: w.createdAt,
    requests: w.requests,
  };
}
