/** A cohort: the queues that lend to and borrow from one shared pool. */
import { recomputePool, type Pool } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { Vec } from './resources.js';

export class CohortState implements Pool {
  readonly members = new Set<QueueState>();
  pool: Vec = [];
  used: Vec = [];

  constructor(readonly name: string) {}

  recompute(): void {
    recomputePool(this, this.members);
  }
}
