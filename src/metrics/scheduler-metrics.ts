/**
 * The scheduler's backfill and its start-time estimates, as Slurm's sdiag shows its backfill cycle
 * (issue #43): jobs admitted ahead of a Backfill reservation, per cluster queue; how many workloads
 * the last pass that tried any tried (its depth); and how far the start-time estimates shown
 * to users (controller/start-estimates.ts) land from the admissions that follow — each job's first
 * estimate against its admission, early or late. As Kueue's: each pass's duration as a histogram
 * (`berth_scheduler_pass_seconds` is a summary, which cannot be summed over replicas or time),
 * admission attempts by result, and jobs preempted by the queue that preempted and why. The
 * reservations held are gauges of the model (model-metrics.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { WAIT_BUCKETS } from './queue-metrics.js';
import { LATENCY_BUCKETS } from './store-metrics.js';

/**
 * Why a job was preempted (Kueue's reasons, berth's names): for a job of its own queue, or to
 * take back quota its queue had lent to the cohort.
 */
export type PreemptionReason = 'in_queue' | 'reclaim_in_cohort';

export class SchedulerMetrics {
  private readonly backfilled: Counter<'queue'>;
  private readonly depth: Gauge;
  private readonly estimateError: Histogram<'admitted'>;
  private readonly passDuration: Histogram;
  private readonly attempts: Counter<'result'>;
  private readonly preempted: Counter<'preempting_queue' | 'reason'>;

  constructor(registers: Registry[]) {
    this.passDuration = new Histogram({
      name: 'berth_scheduler_pass_duration_seconds',
      help: 'Wall time of each scheduler pass that had pending work (a histogram: summed over replicas and time, unlike the summary)',
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.attempts = new Counter({
      name: 'berth_admission_attempts_total',
      help: 'Workloads the scheduler tried to admit, by result: admitted, or inadmissible (parked, held back, blocked or waiting on its preemptions)',
      labelNames: ['result'],
      registers,
    });
    for (const result of ['admitted', 'inadmissible']) this.attempts.inc({ result }, 0);
    this.preempted = new Counter({
      name: 'berth_preempted_jobs_total',
      help: 'Jobs preempted, by the cluster queue whose job preempted them and why: in_queue (a job of that queue), reclaim_in_cohort (quota it had lent taken back)',
      labelNames: ['preempting_queue', 'reason'],
      registers,
    });
    this.backfilled = new Counter({
      name: 'berth_backfilled_jobs_total',
      help: "Jobs a Backfill queue admitted ahead of its reservation's job (without delaying it), per cluster queue",
      labelNames: ['queue'],
      registers,
    });
    this.depth = new Gauge({
      name: 'berth_scheduler_pass_depth',
      help: 'Workloads the last scheduler pass that tried any tried (each admitted, parked, held back or blocked): its depth, as sdiag reports backfill’s',
      registers,
    });
    this.estimateError = new Histogram({
      name: 'berth_start_estimate_error_seconds',
      help: 'How far a job’s admission landed from the first start-time estimate it was shown: admitted early (before it) or late',
      labelNames: ['admitted'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    for (const admitted of ['early', 'late']) this.estimateError.zero({ admitted });
  }

  /**
   * A pass with pending work took `seconds` and tried `depth` workloads (most passes woken by an
   * event try none), `admitted` of them admitted.
   */
  pass(seconds: number, depth: number, admitted: number): void {
    this.passDuration.observe(seconds);
    if (depth <= 0) return;
    this.depth.set(depth);
    this.attempts.inc({ result: 'admitted' }, admitted);
    if (depth > admitted) this.attempts.inc({ result: 'inadmissible' }, depth - admitted);
  }

  jobPreempted(preemptingQueue: string, reason: PreemptionReason): void {
    this.preempted.inc({ preempting_queue: preemptingQueue, reason });
  }

  jobBackfilled(queue: string): void {
    this.backfilled.inc({ queue });
  }

  /** A job was admitted `seconds` after its first estimate (negative: before it). */
  startEstimated(seconds: number): void {
    this.estimateError.observe({ admitted: seconds < 0 ? 'early' : 'late' }, Math.abs(seconds));
  }
}
