import type { ClusterQueue } from '../domain/cluster-queue.js';
import { queueAmounts } from '../domain/cluster-queue-spec.js';
import type { QueueModel } from '../scheduler/types.js';

/** A stored cluster queue as the scheduler sees it. */
export function toQueueModel(q: ClusterQueue): QueueModel {
  const amounts = queueAmounts(q);
  return {
    name: q.name,
    cohort: q.cohort,
    nominal: amounts.nominal,
    borrowingLimit: amounts.borrowingLimit,
    lendingLimit: amounts.lendingLimit,
    queueingStrategy: q.queueingStrategy,
    preemption: q.preemption,
    stopPolicy: q.stopPolicy,
  };
}
