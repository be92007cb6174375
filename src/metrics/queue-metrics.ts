/**
 * The metrics an SLO on waiting is written over (issue #43), as Kueue names them for its cluster
 * queues: how long jobs wait to be admitted and to run, per cluster queue (histograms, so a
 * quantile or the share under a bound can be taken over any window and summed over replicas);
 * evictions by reason; and per queue, cohort and resource the quota it is given, may borrow and
 * may lend, and what it borrows now — read from the scheduler's model at each scrape.
 *
 * Labels are bounded: a queue, its cohort, a resource, a reason from a fixed set — never a job or
 * a project (a project's series would grow with the tenants).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { isMilliResource, type Amounts } from '../domain/quantity.js';

/** Why a job that held quota lost it. */
export type EvictionReason = 'preempt' | 'drain';

/**
 * Seconds, from a tenth of a second (a job admitted in the pass after its submission) to Kueue's
 * top bucket, 10,240 s (under three hours): a wait longer counts in +Inf.
 */
export const WAIT_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240];

/** What the quota gauges show of one queue, read at each scrape. */
export interface QueueQuota {
  name: string;
  cohort: string | null;
  nominal: Amounts;
  borrowingLimit: Amounts;
  lendingLimit: Amounts;
  borrowed: Amounts;
}

/** cpu is counted in millicores inside berth; Prometheus shows base units (cores). */
export const baseUnits = (resource: string, amount: number): number =>
  isMilliResource(resource) ? amount / 1000 : amount;

export class QueueMetrics {
  private readonly admissionWait: Histogram<'queue'>;
  private readonly startWait: Histogram<'queue'>;
  private readonly evicted: Counter<'queue' | 'reason'>;

  constructor(registers: Registry[], quotas: () => Iterable<QueueQuota>) {
    this.admissionWait = new Histogram({
      name: 'berth_admission_wait_seconds',
      help: 'From a job being queued (submitted, or requeued after an eviction or for a retry) to its admission, per cluster queue',
      labelNames: ['queue'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.startWait = new Histogram({
      name: 'berth_start_wait_seconds',
      help: 'From a job being queued to its command running on its worker (admission, resources, worker, image), per cluster queue',
      labelNames: ['queue'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    this.evicted = new Counter({
      name: 'berth_evicted_jobs_total',
      help: 'Jobs that lost their quota before they ended, per cluster queue and reason: preempt (for another job), drain (their queue was drained)',
      labelNames: ['queue', 'reason'],
      registers,
    });
    const perResource = (name: string, help: string, amounts: (q: QueueQuota) => Amounts) =>
      new Gauge({
        name,
        help,
        labelNames: ['queue', 'cohort', 'resource'],
        registers,
        collect() {
          this.reset();
          for (const q of quotas())
            for (const [resource, amount] of Object.entries(amounts(q)))
              this.set({ queue: q.name, cohort: q.cohort ?? '', resource }, baseUnits(resource, amount));
        },
      });
    perResource(
      'berth_queue_nominal_quota',
      'Nominal quota per cluster queue and resource, in base units (cpu in cores)',
      (q) => q.nominal,
    );
    perResource(
      'berth_queue_borrowing_limit',
      'How much a cluster queue may use above its nominal quota, borrowed from its cohort (a resource without a limit is not shown)',
      (q) => q.borrowingLimit,
    );
    perResource(
      'berth_queue_lending_limit',
      'How much of its nominal quota a cluster queue lends its cohort at most (a resource without a limit is not shown)',
      (q) => q.lendingLimit,
    );
    perResource(
      'berth_queue_borrowed',
      "What a cluster queue uses now above its nominal quota, from its cohort's unused quota (0 for each resource of its quota it does not borrow)",
      // Every resource of its quota, at 0 while it borrows none: a panel or a sum over queues
      // then has a series before the first borrowing.
      (q) => ({ ...Object.fromEntries(Object.keys(q.nominal).map((r) => [r, 0])), ...q.borrowed }),
    );
  }

  admitted(queue: string, waitSeconds: number): void {
    this.admissionWait.observe({ queue }, Math.max(0, waitSeconds));
  }

  started(queue: string, waitSeconds: number): void {
    this.startWait.observe({ queue }, Math.max(0, waitSeconds));
  }

  evictedFrom(queue: string, reason: EvictionReason): void {
    this.evicted.inc({ queue, reason });
  }
}
