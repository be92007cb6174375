/**
 * The cluster queues as the scheduler knows them, also kept here so that a submission is checked
 * against them without a store read.
 */
import type { ClusterQueue } from '../domain/cluster-queue.js';
import type { QueueModel, SchedulerApi } from '../scheduler/types.js';
import { queueAmounts } from '../domain/cluster-queue-spec.js';

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
    ...(q.estimates === undefined ? {} : { estimates: q.estimates }),
    ...(q.backfill === undefined ? {} : { backfill: { ...q.backfill } }),
    preemption: q.preemption,
    stopPolicy: q.stopPolicy,
    maxQueuedPerProject: q.maxQueuedPerProject ?? null,
  };
}

export class QueueModels {
  private readonly models = new Map<string, QueueModel>();

  constructor(private readonly scheduler: SchedulerApi) {}

  /** Adds or replaces a queue (also in the scheduler). */
  upsert(model: QueueModel): void {
    this.models.set(model.name, model);
    this.scheduler.upsertQueue(model);
  }

  /** A queue was created or changed (`queue`), or deleted (undefined). */
  changed(name: string, queue: ClusterQueue | undefined): void {
    if (queue) this.upsert(toQueueModel(queue));
    else {
      this.models.delete(name);
      this.scheduler.removeQueue(name);
    }
  }

  get size(): number {
    return this.models.size;
  }

  get(name: string): QueueModel | undefined {
    return this.models.get(name);
  }

  all(): Iterable<QueueModel> {
    return this.models.values();
  }

  names(): Iterable<string> {
    return this.models.keys();
  }
}
