/** The most a queue could ever grant, used to refuse requests that could never be admitted. */
import type { QueueAmounts } from './cluster-queue.js';

export interface QueueCapacityView extends QueueAmounts {
  name: string;
  cohort: string | null;
}

/**
 * Per QUEUEING.md: a queue reaches at most its nominal plus what the rest of its cohort lends,
 * capped by its borrowing limit. A resource the queue does not name is not limited by it.
 */
export function maxReachable(queue: QueueCapacityView, all: QueueCapacityView[], resource: string): number {
  const nominal = queue.nominal[resource];
  if (nominal === undefined) return Infinity;
  if (!queue.cohort) return nominal;
  let lent = 0;
  for (const other of all) {
    if (other.name === queue.name || other.cohort !== queue.cohort) continue;
    lent += other.lendingLimit[resource] ?? other.nominal[resource] ?? 0;
  }
  return nominal + Math.min(queue.borrowingLimit[resource] ?? Infinity, lent);
}
