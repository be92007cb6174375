/** A cohort: the queues that lend to and borrow from one shared pool. */
import { recomputePool, type Holder, type Pool } from './quota.js';
import type { Vec } from './resources.js';

/** `M`: its member queues' type (queue-state.ts's QueueState), which this leaf does not import. */
export class CohortState<M extends Holder = Holder> implements Pool {
  readonly members = new Set<M>();
  pool: Vec = [];
  used: Vec = [];

  constructor(readonly name: string) {}

  recompute(): void {
    recomputePool(this, this.members);
  }
}
