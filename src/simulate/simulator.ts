/**
 * `berth simulate`: a scenario replayed on the pure scheduler with a virtual clock. No store, no
 * HTTP, no workers: a discrete-event loop over creations and completions. At each instant it
 * applies completions (release) and stops of evicted workloads (requeue), then creations
 * (enqueue), then calls `schedule(now)` until it has nothing more to decide. Workloads run for
 * their runtime once admitted; an evicted one loses its run and, readmitted, runs in full again
 * (Kueue's scheduler-performance semantics).
 *
 * What the server adds — the store, HTTP, handing the job to a worker — is not modelled, except as
 * `admissionLatencyMs`: virtual time between the admit decision and the workload starting to run,
 * during which it already holds its quota.
 */
import { JOBS_RESOURCE } from '../domain/cluster-queue.js';
import { parseAmount, type Amounts } from '../domain/quantity.js';
import { IndexedHeap, type HeapItem } from '../scheduler/heap.js';
import { Scheduler, type Decision, type QueueModel } from '../scheduler/index.js';
import { buildReport, type ScenarioReport, type WorkloadRecord } from './report.js';
import type { ExpandedScenario, PlannedQueue, PlannedWorkload } from './scenario.js';

export interface SimulateOptions {
  /** Virtual ms between an admit decision and the workload starting to run (default 0). */
  admissionLatencyMs?: number;
  /** Virtual ms between a preemption and its victims having stopped (default 0). */
  stopLatencyMs?: number;
  /** Called about once a second of real time while the simulation runs. */
  onProgress?: (p: SimulationProgress) => void;
  /**
   * Called at each instant at which workloads were created, once they have joined their queues and
   * before the pass that may admit them (where a server answers their submission): what the
   * start-time estimates' accuracy is measured from (estimate-accuracy.ts).
   */
  onCreated?: (created: PlannedWorkload[], now: number, view: SimulationView) => void;
  /** Called when a workload has run its whole runtime. */
  onFinished?: (w: PlannedWorkload, ranMs: number) => void;
  /** A workload's predicted runtime as it joins its queue (`Workload.expectedMs`); absent: none. */
  expectedMs?: (w: PlannedWorkload) => number | null;
}

/** The simulation's present, read-only: its scheduler, and since when an admitted workload runs. */
export interface SimulationView {
  readonly scheduler: Scheduler;
  heldSince(seq: number): number | null;
}

export interface SimulationProgress {
  /** Virtual time, ms. */
  now: number;
  created: number;
  finished: number;
  total: number;
}

export interface SimulationResult {
  report: ScenarioReport;
  records: WorkloadRecord[];
  /** Real time the simulation took, ms. */
  elapsedMs: number;
  /** Calls to schedule(). */
  passes: number;
}

/** Completions before stops: what ends at an instant frees its quota before anything else. */
const COMPLETION = 0;
const STOP = 1;

interface SimEvent extends HeapItem {
  at: number;
  kind: typeof COMPLETION | typeof STOP;
  /** Index of the workload in the plan. */
  w: number;
  order: number;
}

/** A workload's live state; ids are `seq`, i.e. index + 1. */
interface Live {
  plan: PlannedWorkload;
  requests: Amounts;
  firstAdmit: number | null;
  heldSince: number | null;
  finishedAt: number | null;
  evictions: number;
  runs: [number, number][];
  completion: SimEvent | null;
}

/** A scenario workload's request of `units` of `resource`, as the scheduler counts it. */
export function workloadRequests(resource: string, units: number): Amounts {
  return { [resource]: parseAmount(resource, String(units)), [JOBS_RESOURCE]: 1 };
}

export function queueModel(q: PlannedQueue, resource: string): QueueModel {
  const amount = (units: number) => parseAmount(resource, String(units));
  return {
    name: q.name,
    cohort: q.cohort,
    nominal: { [resource]: amount(q.nominal) },
    borrowingLimit: q.borrowingLimit === null ? {} : { [resource]: amount(q.borrowingLimit) },
    lendingLimit: {},
    queueingStrategy: q.strategy ?? 'BestEffortFIFO',
    ...(q.estimates === undefined ? {} : { estimates: q.estimates }),
    ...(q.reservations === undefined ? {} : { backfill: { reservations: q.reservations } }),
    preemption: { reclaimWithinCohort: q.reclaimWithinCohort, withinClusterQueue: q.withinClusterQueue },
    stopPolicy: 'None',
  };
}

/** Growable list of pass durations, for the p99. */
class Durations {
  private data = new Float64Array(1 << 12);
  length = 0;
  push(ms: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = ms;
  }
  quantile(q: number): number | null {
    if (this.length === 0) return null;
    const sorted = this.data.slice(0, this.length).sort();
    return sorted[Math.min(this.length - 1, Math.ceil(q * this.length) - 1)] ?? null;
  }
}

/**
 * A workload evicted this often at one instant means the scheduler is cycling through the same
 * preemptions (with no time passing, nothing else can change): report it instead of spinning.
 */
const MAX_EVICTIONS_PER_INSTANT = 50;

/** The scheduler kept evicting the same workload at one virtual instant. */
export class FlappingError extends Error {
  constructor(
    readonly workload: PlannedWorkload,
    readonly at: number,
  ) {
    super(
      `the scheduler does not settle at virtual time ${at} ms: workload ${workload.name} of queue ${workload.queue} ` +
        `was evicted ${MAX_EVICTIONS_PER_INSTANT} times at that instant (a scheduler bug: please report it with this scenario)`,
    );
    this.name = 'FlappingError';
  }
}

export function simulate(plan: ExpandedScenario, opts: SimulateOptions = {}): SimulationResult {
  const started = performance.now();
  const admissionLatency = opts.admissionLatencyMs ?? 0;
  const stopLatency = opts.stopLatencyMs ?? 0;
  const scheduler = new Scheduler();
  for (const q of plan.queues) scheduler.upsertQueue(queueModel(q, plan.resource));
  // Amounts are parsed once per distinct request, not once per workload.
  const amounts = new Map<number, Amounts>();
  const live: Live[] = plan.workloads.map((w, i) => {
    // Ids index the workloads: what the scheduler decides about `id` is `live[id - 1]`.
    if (w.seq !== i + 1) throw new RangeError(`workload ${i} has seq ${w.seq}, expected ${i + 1}`);
    let requests = amounts.get(w.request);
    if (requests === undefined) {
      requests = workloadRequests(plan.resource, w.request);
      amounts.set(w.request, requests);
    }
    return {
      plan: w,
      requests,
      firstAdmit: null,
      heldSince: null,
      finishedAt: null,
      evictions: 0,
      runs: [],
      completion: null,
    };
  });
  const events = new IndexedHeap<SimEvent>((a, b) =>
    a.at !== b.at ? a.at < b.at : a.kind !== b.kind ? a.kind < b.kind : a.order < b.order,
  );
  let order = 0;
  const push = (at: number, kind: SimEvent['kind'], w: number): SimEvent => {
    const e: SimEvent = { at, kind, w, order: order++, heapIndex: -1 };
    events.push(e);
    return e;
  };
  const durations = new Durations();
  let admissions = 0;
  let created = 0;
  let finished = 0;
  let lastProgress = started;
  let instants = 0;

  const endHold = (l: Live, now: number) => {
    if (l.heldSince !== null) l.runs.push([l.heldSince, now]);
    l.heldSince = null;
  };
  const stop = (i: number, now: number) => {
    const l = live[i] as Live;
    endHold(l, now);
    scheduler.requeue(l.plan.seq);
  };
  // Evictions per workload at the current instant.
  let evictedNow = new Map<number, number>();
  const evict = (id: number, now: number) => {
    const i = id - 1;
    const l = live[i] as Live;
    l.evictions++;
    const n = (evictedNow.get(i) ?? 0) + 1;
    evictedNow.set(i, n);
    if (n >= MAX_EVICTIONS_PER_INSTANT) throw new FlappingError(l.plan, now);
    if (l.completion !== null) events.remove(l.completion);
    l.completion = null;
    if (stopLatency === 0) stop(i, now);
    else push(now + stopLatency, STOP, i);
  };
  const apply = (d: Decision, now: number) => {
    if (d.kind === 'admit') {
      const l = live[d.id - 1] as Live;
      admissions++;
      l.firstAdmit ??= now;
      l.heldSince = now;
      l.completion = push(now + admissionLatency + l.plan.runtimeMs, COMPLETION, d.id - 1);
    } else if (d.kind === 'preempt') {
      for (const v of d.victims) evict(v, now);
    } else evict(d.id, now);
  };

  const view: SimulationView = { scheduler, heldSince: (seq) => live[seq - 1]?.heldSince ?? null };
  const workloads = plan.workloads;
  let next = 0;
  while (next < workloads.length || events.size > 0) {
    const top = events.peek();
    const creation = workloads[next];
    const now = Math.min(top?.at ?? Infinity, creation?.at ?? Infinity);
    for (let e = events.peek(); e !== undefined && e.at === now; e = events.peek()) {
      events.pop();
      const l = live[e.w] as Live;
      if (e.kind === STOP) stop(e.w, now);
      else {
        l.completion = null;
        opts.onFinished?.(l.plan, now - (l.heldSince ?? now));
        endHold(l, now);
        l.finishedAt = now;
        finished++;
        scheduler.release(l.plan.seq);
      }
    }
    const firstCreated = next;
    for (let w = workloads[next]; w !== undefined && w.at === now; w = workloads[++next]) {
      const l = live[next] as Live;
      scheduler.enqueue({
        id: w.seq,
        queue: w.queue,
        project: w.queue,
        priority: w.priority,
        createdAt: w.at,
        requests: l.requests,
        timeoutMs: w.timeoutMs ?? null,
        expectedMs: opts.expectedMs?.(w) ?? null,
      });
      created++;
    }
    if (opts.onCreated && next > firstCreated) opts.onCreated(workloads.slice(firstCreated, next), now, view);
    if (evictedNow.size > 0) evictedNow = new Map();
    for (;;) {
      const t0 = performance.now();
      const decisions = scheduler.schedule(now);
      durations.push(performance.now() - t0);
      if (decisions.length === 0) break;
      for (const d of decisions) apply(d, now);
    }
    if (opts.onProgress !== undefined && (++instants & 0xff) === 0) {
      const t = performance.now();
      if (t - lastProgress >= 1000) {
        lastProgress = t;
        opts.onProgress({ now, created, finished, total: workloads.length });
      }
    }
  }

  const records: WorkloadRecord[] = live.map((l) => ({
    className: l.plan.className,
    queue: l.plan.queue,
    request: l.plan.request,
    createdAt: l.plan.at,
    admittedAt: l.firstAdmit,
    finishedAt: l.finishedAt,
    evictions: l.evictions,
    runs: l.runs,
  }));
  const report = buildReport(plan.queues, records, {
    start: 0,
    admissions,
    decisionP99Ms: durations.quantile(0.99),
  });
  return { report, records, elapsedMs: performance.now() - started, passes: durations.length };
}
