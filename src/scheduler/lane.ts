/**
 * A lane: one project's share of one queue. It holds that project's pending workloads (a treap in
 * admission order), its usage of the queue (for fair share) and its current candidate, i.e. the
 * workload it offers to the queue's project heap.
 */
import type { HeapItem } from './heap.js';
import { compareKeys } from './ordering.js';
import type { Vec } from './resources.js';
import type { WorkloadNode } from './workload-node.js';

export class Lane implements HeapItem {
  root: WorkloadNode | null = null;
  candidate: WorkloadNode | null = null;
  /** False while `candidate` is only a lower bound of the lane's candidate (see queue-state.ts). */
  exact = false;
  heapIndex = -1;
  /** Quota held by this project's admitted workloads in the queue. */
  usage: Vec = [];
  admitted = 0;
  /** Dominant share of the queue divided by the project's weight (see fair-share.ts). */
  share = 0;
  /**
   * The queue's admission round (see QueueState.round) in which this project was last served,
   * i.e. had a workload admitted; 0: never. Breaks ties of share: least recently served first.
   */
  served = 0;

  constructor(readonly project: string) {}

  get empty(): boolean {
    return this.root === null && this.admitted === 0;
  }
}

/**
 * The queue's next workload: highest priority first; at equal priority, the project with the
 * least weighted dominant share; at equal share, the project served least recently (a project
 * never served first), so that a project whose running jobs ended does not win every tie against
 * one that is still waiting; then creation time and id. Lanes without a candidate are not in the
 * heap.
 */
export function laneBefore(a: Lane, b: Lane): boolean {
  const x = a.candidate;
  const y = b.candidate;
  if (x === null || y === null) return x !== null;
  return offeredBefore(a, x, b, y);
}

/** Whether lane `a` offering `x` goes before lane `b` offering `y` (see laneBefore). */
export function offeredBefore(a: Lane, x: WorkloadNode, b: Lane, y: WorkloadNode): boolean {
  if (x.priority !== y.priority) return x.priority > y.priority;
  if (a.share !== b.share) return a.share < b.share;
  if (a.served !== b.served) return a.served < b.served;
  return compareKeys(x, y) < 0;
}
