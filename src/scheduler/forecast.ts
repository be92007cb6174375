/**
 * When will each pending workload be admitted? A forecast replays the real scheduler, from a
 * snapshot of the present, on a virtual clock: the admitted workloads end at their expected ends,
 * each admission frees nothing until its expected runtime has passed, and every pass decides as
 * the live scheduler would (order, fair share, borrowing, preemption). Used for the start-time
 * estimates of pending jobs and by `berth simulate --from-server` (what if a quota changed?).
 *
 * Pure: the caller supplies the snapshot and the runtimes; no clock, no I/O. A forecast is only as
 * good as those runtimes: the caller labels it with how they were made.
 */
import { IndexedHeap, type HeapItem } from './heap.js';
import type { RecentArrivals } from './recent-arrivals.js';
import { Scheduler } from './scheduler.js';
import type { AdmittedWorkload, JobId, QueueModel, SchedulerApi, Workload } from './types.js';

/** A workload holding quota now, and when it is expected to end. */
export interface ForecastAdmitted {
  workload: AdmittedWorkload;
  /** Expected end (ms); one in the past is taken as now. */
  endsAt: number;
  /** Its whole runtime, should it be evicted in the forecast and run again. */
  runtimeMs: number;
}

/** A workload waiting (or about to wait) for admission, and how long it runs once admitted. */
export interface ForecastPending {
  workload: Workload;
  runtimeMs: number;
  /** When it joins its queue, if later than now (a retry after its backoff). */
  arrivesAt?: number;
}

export interface ForecastInput {
  now: number;
  queues: QueueModel[];
  /** Fair-share weight per project (absent: 1). */
  weights?: [string, number][];
  admitted: ForecastAdmitted[];
  pending: ForecastPending[];
  /**
   * Work expected to be submitted later (recent-arrivals.ts), with `arrivesAt`: it competes with
   * the pending workloads but gets no start of its own. Ids must not clash with real ones.
   */
  projected?: ForecastPending[];
}

export interface ForecastOptions {
  /** Stop looking this far past `now` (ms; default 30 days): later admissions are unknown. */
  horizonMs?: number;
  /** Virtual ms from an admission to its runtime starting (default 0). */
  admissionLatencyMs?: number;
  /**
   * Asked now and then (every 8 instants): true stops the forecast where it is, the workloads not
   * yet started left without a start (a server bounds the time a forecast may take).
   */
  shouldStop?: () => boolean;
}

export interface ForecastResult {
  /** Forecast admission time of each pending workload admitted within the horizon. */
  startAt: Map<JobId, number>;
  /** Evictions the forecast made (a preemption's victims, drains). */
  evictions: number;
  /** Whether `shouldStop` cut it short. */
  stopped: boolean;
}

const DEFAULT_HORIZON_MS = 30 * 24 * 3600_000;
/** As in the simulator: a workload evicted this often at one instant means the passes cycle. */
const MAX_EVICTIONS_PER_INSTANT = 50;

interface Ending extends HeapItem {
  at: number;
  id: JobId;
  order: number;
}

interface Arrival {
  at: number;
  p: ForecastPending;
}

export function forecast(input: ForecastInput, opts: ForecastOptions = {}): ForecastResult {
  const { now: start } = input;
  const horizon = start + (opts.horizonMs ?? DEFAULT_HORIZON_MS);
  const latency = opts.admissionLatencyMs ?? 0;
  const scheduler = new Scheduler();
  for (const q of input.queues) scheduler.upsertQueue(q);
  for (const [project, weight] of input.weights ?? []) scheduler.setProjectWeight(project, weight);

  const runtime = new Map<JobId, number>();
  const endings = new IndexedHeap<Ending>((a, b) => (a.at !== b.at ? a.at < b.at : a.order < b.order));
  const endingOf = new Map<JobId, Ending>();
  let order = 0;
  const scheduleEnd = (id: JobId, at: number) => {
    const e: Ending = { at, id, order: order++, heapIndex: -1 };
    endings.push(e);
    endingOf.set(id, e);
  };
  for (const a of input.admitted) {
    scheduler.restoreAdmitted(a.workload);
    runtime.set(a.workload.id, a.runtimeMs);
    scheduleEnd(a.workload.id, Math.max(start, a.endsAt));
  }
  const arrivals: Arrival[] = [];
  const projected = input.projected ?? [];
  for (const p of [...input.pending, ...projected]) {
    runtime.set(p.workload.id, p.runtimeMs);
    if (p.arrivesAt !== undefined && p.arrivesAt > start) arrivals.push({ at: p.arrivesAt, p });
    else scheduler.enqueue(p.workload);
  }
  arrivals.sort((a, b) => a.at - b.at);
  // Once every pending workload has a start, what follows changes none: the forecast stops.
  const waiting = new Set(input.pending.map((p) => p.workload.id));

  const result: ForecastResult = { startAt: new Map(), evictions: 0, stopped: false };
  let evictedNow = new Map<JobId, number>();
  const evict = (id: JobId, now: number) => {
    const n = (evictedNow.get(id) ?? 0) + 1;
    evictedNow.set(id, n);
    // Cycling at one instant: leave the rest unknown rather than spin.
    if (n >= MAX_EVICTIONS_PER_INSTANT) throw new ForecastCycleError(id, now);
    result.evictions++;
    const e = endingOf.get(id);
    if (e) endings.remove(e);
    endingOf.delete(id);
    scheduler.requeue(id);
  };

  let next = 0;
  try {
    for (let now = start, instants = 0; now <= horizon; instants++) {
      if ((instants & 7) === 7 && opts.shouldStop?.()) {
        result.stopped = true;
        break;
      }
      for (let e = endings.peek(); e !== undefined && e.at === now; e = endings.peek()) {
        endings.pop();
        endingOf.delete(e.id);
        scheduler.release(e.id);
      }
      for (let a = arrivals[next]; a !== undefined && a.at === now; a = arrivals[++next])
        scheduler.enqueue(a.p.workload);
      if (evictedNow.size > 0) evictedNow = new Map();
      for (;;) {
        const decisions = scheduler.schedule(now);
        if (decisions.length === 0) break;
        for (const d of decisions) {
          if (d.kind === 'admit') {
            if (waiting.delete(d.id)) result.startAt.set(d.id, now);
            scheduleEnd(d.id, now + latency + (runtime.get(d.id) ?? 0));
          } else if (d.kind === 'preempt') for (const v of d.victims) evict(v, now);
          else evict(d.id, now);
        }
      }
      if (waiting.size === 0) break;
      const upcoming = Math.min(endings.peek()?.at ?? Infinity, arrivals[next]?.at ?? Infinity);
      if (upcoming === Infinity) break;
      now = upcoming;
    }
  } catch (e) {
    if (!(e instanceof ForecastCycleError)) throw e;
  }
  return result;
}

/** The scheduler kept evicting one workload at one virtual instant: the forecast stops there. */
class ForecastCycleError extends Error {
  constructor(
    readonly id: JobId,
    readonly at: number,
  ) {
    super(`forecast: workload ${id} evicted repeatedly at ${at}`);
  }
}

/** What the caller knows of a workload, for `snapshot`: undefined leaves it out. */
export interface SnapshotSource {
  /** An admitted workload's expected end and whole runtime. */
  admitted(w: AdmittedWorkload): { endsAt: number; runtimeMs: number } | undefined;
  /** A pending workload as it would run. */
  pending(id: JobId, queue: string): ForecastPending | undefined;
}

/**
 * A forecast's input from a live scheduler: every workload holding quota, and the first
 * `perQueue` pending workloads of each queue in admission order (further back, their cost would
 * grow with the backlog). Also returns which pending workloads it took.
 */
export function snapshot(
  scheduler: SchedulerApi,
  queues: QueueModel[],
  now: number,
  perQueue: number,
  source: SnapshotSource,
): { input: ForecastInput; considered: Set<JobId> } {
  const admitted: ForecastAdmitted[] = [];
  for (const w of scheduler.admittedWorkloads()) {
    const e = source.admitted(w);
    if (e) admitted.push({ workload: w, ...e });
  }
  const pending: ForecastPending[] = [];
  const considered = new Set<JobId>();
  for (const q of queues)
    for (const id of scheduler.pendingIds(q.name, 0, perQueue)) {
      const p = source.pending(id, q.name);
      if (!p) continue;
      considered.add(id);
      pending.push(p);
    }
  const input = { now, queues, weights: [...scheduler.projectWeights()], admitted, pending };
  return { input, considered };
}

/**
 * Adds to `input` the work expected to arrive (recent-arrivals.ts) that could overtake a pending
 * workload: of a higher priority than the lowest pending one. (Later work of the same or a lower
 * priority queues behind; only fair share between projects could let it by, which is left out.)
 * Projected workloads get ids -1, -2, …
 */
export function addProjected<T>(
  input: ForecastInput,
  arrivals: RecentArrivals<T>,
  horizonMs: number,
  max: number,
  asPending: (item: T) => Omit<ForecastPending, 'arrivesAt'>,
  priorityOf: (item: T) => number,
): void {
  if (input.pending.length === 0) return;
  let lowest = Infinity;
  for (const p of input.pending) lowest = Math.min(lowest, p.workload.priority);
  input.projected = arrivals
    .project(input.now, horizonMs, max, (item) => priorityOf(item) > lowest)
    .map((a, i) => {
      const p = asPending(a.item);
      return { ...p, workload: { ...p.workload, id: -(i + 1), createdAt: a.at }, arrivesAt: a.at };
    });
}
