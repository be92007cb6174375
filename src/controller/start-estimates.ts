/**
 * When each pending job is expected to start: a forecast (scheduler/forecast.ts) from the model —
 * the jobs holding quota with their expected ends, the first jobs of every queue in admission
 * order, the queues' quota and the projects' weights — remade at most once per REFRESH_MS, so a
 * page of jobs costs one forecast, not one per job. Expected runtimes come from the runtimes
 * observed for similar jobs (domain/runtime-history.ts), which every run's end adds to.
 */
import { describeBases, expectedEnd, type RuntimeBasis } from '../domain/runtime-history.js';
import { addProjected, forecast, snapshot, type ForecastInput } from '../scheduler/forecast.js';
import type { ControllerCore } from './core.js';
import type { StartEstimate } from './port.js';
import type { QueueModels } from './queue-models.js';
import { runtimeSubject, workloadOf } from './tracked-jobs.js';
import type { TrackedJob } from './model.js';

/** A forecast is reused this long: estimates are minutes-scale, and a page asks for many at once. */
const REFRESH_MS = 2000;
/** A job newer than the last forecast gets a new one, but not sooner than this after it. */
const REMAKE_MS = 1000;
/** Pending jobs forecast per queue; jobs further back get no estimate (their cost would grow). */
export const ESTIMATED_PER_QUEUE = 1000;
/**
 * Work projected to arrive per forecast at most: the recent arrivals that could overtake a pending
 * job, repeated (scheduler/recent-arrivals.ts). More is closer to the truth under a steady stream
 * of higher-priority work, and costs more per forecast (docs/PERFORMANCE.md, "Start-time
 * estimates").
 */
const MAX_PROJECTED = 2_000;
/** Real time a forecast may take (it runs on the event loop); jobs it does not reach get none. */
export const FORECAST_BUDGET_MS = 50;
/** How far ahead the forecast looks. */
const HORIZON_MS = 7 * 24 * 3600_000;

interface Forecast {
  madeAt: number;
  startAt: Map<number, number>;
  /** The pending jobs it considered. */
  considered: Set<number>;
  /** Cut short by its time budget. */
  stopped: boolean;
  /** How it was made, per group of queues that share quota (a cohort, or a queue of its own). */
  how: Map<string, string>;
}

type Bases = Record<RuntimeBasis, number>;

export class StartEstimates {
  private last: Forecast | null = null;

  constructor(
    private readonly core: ControllerCore,
    private readonly queues: QueueModels,
  ) {}

  /** The estimate for pending job `id`, at `position` in its queue (one the scheduler holds). */
  estimate(id: number, position: number): StartEstimate {
    const queue = this.core.jobs.get(id)?.queue;
    const policy = queue === undefined ? undefined : this.queues.get(queue)?.stopPolicy;
    if (policy !== undefined && policy !== 'None')
      return {
        startAt: null,
        how: `not estimated: queue ${queue} is on hold, it admits nothing until resumed`,
      };
    let f = this.current();
    // Come since the last forecast, near enough the head to be in the next one: make it now —
    // but not sooner than REMAKE_MS after the last, however many new jobs are asked about.
    const now = this.core.o.now();
    if (!f.considered.has(id) && position <= ESTIMATED_PER_QUEUE && now - f.madeAt >= REMAKE_MS)
      f = this.last = this.make(now);
    if (!f.considered.has(id))
      return {
        startAt: null,
        how:
          position > ESTIMATED_PER_QUEUE
            ? `not estimated: more than ${ESTIMATED_PER_QUEUE} jobs ahead in its queue`
            : 'not estimated yet: it came after the last forecast (ask again in a moment)',
      };
    const how = f.how.get(this.groupOf(queue!)) ?? '';
    const at = f.startAt.get(id);
    if (at === undefined && f.stopped)
      return {
        startAt: null,
        how: `not estimated: too far ahead for a forecast of ${FORECAST_BUDGET_MS} ms`,
      };
    if (at === undefined)
      return { startAt: null, how: `not within ${HORIZON_MS / 86_400_000} days (${how})` };
    // The first one shown is what its admission measures the estimates' accuracy by (loop.ts).
    if (!this.core.jobs.estimated.has(id)) this.core.jobs.estimated.set(id, at);
    return { startAt: at, how };
  }

  /** Queues that lend to each other share a forecast's inputs: its cohort, or the queue alone. */
  private groupOf(queue: string): string {
    const cohort = this.queues.get(queue)?.cohort;
    return cohort ? `cohort ${cohort}` : `queue ${queue}`;
  }

  private readonly asPending = (job: TrackedJob) => {
    const expected = this.core.runtimes.expected(runtimeSubject(job));
    return { workload: workloadOf(job, this.core.runtimes), runtimeMs: expected.ms, basis: expected.basis };
  };

  private current(): Forecast {
    const now = this.core.o.now();
    if (this.last === null || now - this.last.madeAt >= REFRESH_MS) this.last = this.make(now);
    return this.last;
  }

  /**
   * What a forecast starts from now: the jobs holding quota with their expected ends, the first
   * pending jobs of every queue, the queues and weights, and the arrivals projected
   * (`berth simulate --from-server` replays it with a change).
   */
  forecastInput(): ForecastInput {
    return this.build(this.core.o.now()).input;
  }

  private make(now: number): Forecast {
    const { input, considered, bases } = this.build(now);
    const began = performance.now();
    const f = forecast(input, {
      horizonMs: HORIZON_MS,
      shouldStop: () => performance.now() - began > FORECAST_BUDGET_MS,
    });
    const how = new Map<string, string>();
    for (const [group, b] of bases)
      how.set(
        group,
        `an estimate: the scheduler replayed from the queues' order and quota, with ${describeBases(b)}`,
      );
    return { madeAt: now, startAt: f.startAt, considered, how, stopped: f.stopped };
  }

  private build(now: number): { input: ForecastInput; considered: Set<number>; bases: Map<string, Bases> } {
    const { jobs, o } = this.core;
    const bases = new Map<string, Bases>();
    const count = (queue: string, basis: RuntimeBasis) => {
      const group = this.groupOf(queue);
      let b = bases.get(group);
      if (!b) bases.set(group, (b = { similar: 0, timeout: 0, queue: 0, assumed: 0 }));
      b[basis]++;
    };
    const { input, considered } = snapshot(o.scheduler, [...this.queues.all()], now, ESTIMATED_PER_QUEUE, {
      admitted: (w) => {
        const job = jobs.get(w.id);
        if (!job) return undefined;
        const expected = this.core.runtimes.expected(runtimeSubject(job));
        count(w.queue, expected.basis);
        // Being stopped (evicted, cancelled), it frees its quota about now; not yet started (its
        // worker or resources on the way), its run is all ahead of it.
        const endsAt =
          job.stopping !== null ? now : expectedEnd(job.startedAt ?? now, expected, job.timeoutSeconds, now);
        return { endsAt, runtimeMs: expected.ms };
      },
      pending: (id, queue) => {
        const job = jobs.unfinished(id);
        if (!job) return undefined;
        const p = this.asPending(job);
        count(queue, p.basis);
        return p;
      },
    });
    // Jobs waiting out a retry's backoff join their queue at its end (bounded as the queues' are).
    for (const job of jobs.backingOff) {
      if (considered.size >= ESTIMATED_PER_QUEUE * (this.queues.size + 1)) break;
      if (job.retryAt === null) continue;
      const p = this.asPending(job);
      count(job.queue, p.basis);
      considered.add(job.id);
      input.pending.push({ ...p, arrivesAt: job.retryAt });
    }
    addProjected(input, this.core.arrivals, HORIZON_MS, MAX_PROJECTED, this.asPending, (job) => job.priority);
    return { input, considered, bases };
  }
}
