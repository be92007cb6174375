/**
 * The scheduler's backfill and its start-time estimates, as Slurm's sdiag shows its backfill cycle
 * (issue #43): jobs admitted ahead of a Backfill reservation, per cluster queue; how many workloads
 * the last pass that tried any tried (its depth); and how far the start-time estimates shown
 * to users (controller/start-estimates.ts) land from the admissions that follow — each job's first
 * estimate against its admission, early or late. The reservations held are gauges of the model
 * (model-metrics.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { WAIT_BUCKETS } from './queue-metrics.js';

export class SchedulerMetrics {
  private readonly backfilled: Counter<'queue'>;
  private readonly depth: Gauge;
  private readonly estimateError: Histogram<'admitted'>;

  constructor(registers: Registry[]) {
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

  /** A pass with pending work tried `depth` workloads (most passes woken by an event try none). */
  pass(depth: number): void {
    if (depth > 0) this.depth.set(depth);
  }

  jobBackfilled(queue: string): void {
    this.backfilled.inc({ queue });
  }

  /** A job was admitted `seconds` after its first estimate (negative: before it). */
  startEstimated(seconds: number): void {
    this.estimateError.observe({ admitted: seconds < 0 ? 'early' : 'late' }, Math.abs(seconds));
  }
}
