/**
 * How good are start-time estimates? A scenario is simulated (simulator.ts); at each workload's
 * creation — where a server answers its submission — its start is estimated the way the server
 * does (controller/start-estimates.ts): a forecast of the scheduler from the present, with
 * runtimes expected from those observed so far (domain/runtime-history.ts: jobs of the same class
 * are "similar"). The error is the estimate minus the admission the simulation then finds.
 *
 * The forecast knows only what has been submitted: a later, higher-priority submission that
 * overtakes a job makes its estimate early. That is part of what is measured.
 */
import type { Amounts } from '../domain/quantity.js';
import { expectedEnd, RuntimeHistory, type RuntimeSubject } from '../domain/runtime-history.js';
import { addProjected, forecast, snapshot } from '../scheduler/forecast.js';
import { RecentArrivals } from '../scheduler/recent-arrivals.js';
import type { QueueModel, Workload } from '../scheduler/types.js';
import type { ExpandedScenario, PlannedWorkload } from './scenario.js';
import { queueModel, simulate, workloadRequests, type SimulateOptions } from './simulator.js';

export interface ClassAccuracy {
  className: string;
  /** Workloads estimated (admitted ones with an estimate at creation). */
  estimated: number;
  /** Workloads that got no estimate (not within the horizon, or too far back in their queue). */
  unestimated: number;
  /** Absolute error, ms. */
  medianAbsErrorMs: number;
  p90AbsErrorMs: number;
  /** Signed error's median: < 0 when estimates come early. */
  medianErrorMs: number;
  /** The real wait (creation → admission), for scale. */
  medianWaitMs: number;
}

export interface EstimateAccuracy {
  classes: ClassAccuracy[];
  forecasts: number;
  /** Real time per forecast, ms (mean). */
  forecastMs: number;
}

export interface AccuracyOptions extends Pick<SimulateOptions, 'admissionLatencyMs'> {
  /** Pending workloads forecast per queue (the server's ESTIMATED_PER_QUEUE). */
  perQueue?: number;
  /** The window of recent arrivals taken to repeat (0: the forecast assumes no more arrivals). */
  arrivalWindowMs?: number;
  /** Projected arrivals per forecast at most. */
  maxProjected?: number;
  /** Real ms a forecast may take (the server's FORECAST_BUDGET_MS); none by default. */
  budgetMs?: number;
}

/** As far as the server's forecasts look (controller/start-estimates.ts). */
const HORIZON_MS = 7 * 24 * 3600_000;

const subject = (w: PlannedWorkload): RuntimeSubject => ({
  project: w.queue,
  name: w.className,
  target: '',
  queue: w.queue,
  timeoutSeconds: null,
});

export function measureEstimates(plan: ExpandedScenario, opts: AccuracyOptions = {}): EstimateAccuracy {
  const perQueue = opts.perQueue ?? 1000;
  const queues: QueueModel[] = plan.queues.map((q) => queueModel(q, plan.resource));
  const history = new RuntimeHistory();
  const windowMs = opts.arrivalWindowMs ?? 60_000;
  const maxProjected = opts.maxProjected ?? 2_000;
  const arrivals = new RecentArrivals<PlannedWorkload>(windowMs);
  const estimate = new Map<number, number | null>();
  const bySeq = (seq: number) => plan.workloads[seq - 1]!;
  // Parsed once per distinct request, as the simulator does.
  const requests = new Map<number, Amounts>();
  const requestsOf = (units: number): Amounts => {
    let r = requests.get(units);
    if (!r) requests.set(units, (r = workloadRequests(plan.resource, units)));
    return r;
  };
  const pendingOf = (w: PlannedWorkload): Workload => ({
    id: w.seq,
    queue: w.queue,
    project: w.queue,
    priority: w.priority,
    createdAt: w.at,
    requests: requestsOf(w.request),
  });
  const asPending = (w: PlannedWorkload) => ({
    workload: pendingOf(w),
    runtimeMs: history.expected(subject(w)).ms,
  });
  let forecasts = 0;
  let spent = 0;
  const sim = simulate(plan, {
    ...(opts.admissionLatencyMs === undefined ? {} : { admissionLatencyMs: opts.admissionLatencyMs }),
    onFinished: (w, ranMs) => history.record(subject(w), ranMs),
    onCreated: (created, now, view) => {
      const t0 = performance.now();
      const { input } = snapshot(view.scheduler, queues, now, perQueue, {
        admitted: (a) => {
          const w = bySeq(a.id);
          const expected = history.expected(subject(w));
          return {
            endsAt: expectedEnd(view.heldSince(a.id) ?? now, expected, null, now),
            runtimeMs: expected.ms,
          };
        },
        pending: (id) => asPending(bySeq(id)),
      });
      if (windowMs > 0) addProjected(input, arrivals, HORIZON_MS, maxProjected, asPending, (w) => w.priority);
      const f = forecast(input, {
        horizonMs: HORIZON_MS,
        ...(opts.budgetMs === undefined ? {} : { shouldStop: () => performance.now() - t0 > opts.budgetMs! }),
      });
      if (windowMs > 0) for (const w of created) arrivals.add(now, w);
      forecasts++;
      spent += performance.now() - t0;
      for (const w of created) estimate.set(w.seq, f.startAt.get(w.seq) ?? null);
    },
  });
  const errors = new Map<string, { abs: number[]; signed: number[]; waits: number[]; none: number }>();
  for (const [i, r] of sim.records.entries()) {
    let e = errors.get(r.className);
    if (!e) errors.set(r.className, (e = { abs: [], signed: [], waits: [], none: 0 }));
    const est = estimate.get(i + 1) ?? null;
    if (r.admittedAt === null) continue;
    e.waits.push(r.admittedAt - r.createdAt);
    if (est === null) {
      e.none++;
      continue;
    }
    e.signed.push(est - r.admittedAt);
    e.abs.push(Math.abs(est - r.admittedAt));
  }
  const classes = [...errors].map(([className, e]) => ({
    className,
    estimated: e.abs.length,
    unestimated: e.none,
    medianAbsErrorMs: quantile(e.abs, 0.5),
    p90AbsErrorMs: quantile(e.abs, 0.9),
    medianErrorMs: quantile(e.signed, 0.5),
    medianWaitMs: quantile(e.waits, 0.5),
  }));
  return { classes, forecasts, forecastMs: forecasts === 0 ? 0 : spent / forecasts };
}

/** Nearest-rank quantile; 0 for no samples. */
function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return 0;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
