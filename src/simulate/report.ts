/**
 * The figures of a scenario run, computed the way Kueue's scheduler-performance recorder does
 * (test/performance/scheduler/runner/recorder), from one record per workload. Pure: the simulator
 * and the real-run driver (bench/kueue.ts) both report through it; the CLI prints it
 * (cli/simulate-report.ts).
 */
import type { PlannedQueue } from './scenario.js';

/** One workload's history; times in ms on one clock. */
export interface WorkloadRecord {
  className: string;
  queue: string;
  /** Whole units of the scenario's resource. */
  request: number;
  createdAt: number;
  /** First admission, or null if never admitted. */
  admittedAt: number | null;
  finishedAt: number | null;
  /** Times it was evicted (preempted) and requeued. */
  evictions: number;
  /**
   * Each interval during which it held quota ([admitted, evicted or finished]). Absent: taken as
   * [admittedAt, finishedAt], which overstates an evicted workload's usage.
   */
  runs?: [number, number][];
}

export interface ReportExtras {
  /** Start of generation: what wall time and monitoring time count from. */
  start: number;
  /** Admissions decided, re-admissions after eviction included. */
  admissions: number;
  /** p99 of the time one scheduling pass takes, in ms; null when unknown. */
  decisionP99Ms: number | null;
}

export interface QueueClassFigures {
  className: string;
  queues: number;
  /** Σ nominal quota of the class's queues, in whole units. */
  nominal: number;
  /** Σ (units · ms held) / (Σ nominal × monitoring time), in % of nominal. */
  usagePercent: number;
}

export interface WorkloadClassFigures {
  className: string;
  count: number;
  /** Over the admitted ones; null if none was. */
  avgTimeToAdmissionMs: number | null;
  /** Over the finished ones; null if none did. */
  avgTimeToFinishMs: number | null;
  evictions: number;
  /**
   * Units · seconds of quota held by runs that an eviction ended (the work lost to evictions), from
   * the workloads' run intervals; 0 for workloads without them.
   */
  evictedUnitSeconds: number;
}

export interface ScenarioReport {
  /** Start of generation → last workload finished. */
  wallMs: number;
  workloads: number;
  /** Workloads that never finished (a run cut short); their time does not count. */
  unfinished: number;
  queueClasses: QueueClassFigures[];
  lowestUsagePercent: number;
  workloadClasses: WorkloadClassFigures[];
  admissions: number;
  admissionsPerSecond: number;
  decisionP99Ms: number | null;
  /** Evicted workloads whose usage was taken from first admission to finish (no run intervals). */
  usageApproximated: number;
}

const mean = (sum: number, n: number): number | null => (n === 0 ? null : sum / n);

/** Units · ms held by the runs an eviction ended: every run but a finished workload's last. */
function evictedUnitMs(r: WorkloadRecord): number {
  const runs = r.runs ?? [];
  const evicted = r.finishedAt === null ? runs : runs.slice(0, -1);
  return evicted.reduce((s, [a, b]) => s + Math.max(0, b - a), 0) * r.request;
}

function heldUnitMs(r: WorkloadRecord): { unitMs: number; approximated: boolean } {
  if (r.runs !== undefined) {
    return {
      unitMs: r.runs.reduce((s, [a, b]) => s + Math.max(0, b - a), 0) * r.request,
      approximated: false,
    };
  }
  if (r.admittedAt === null || r.finishedAt === null) return { unitMs: 0, approximated: false };
  return { unitMs: Math.max(0, r.finishedAt - r.admittedAt) * r.request, approximated: r.evictions > 0 };
}

export function buildReport(
  queues: PlannedQueue[],
  records: WorkloadRecord[],
  extras: ReportExtras,
): ScenarioReport {
  let end = extras.start;
  let unfinished = 0;
  let usageApproximated = 0;
  const used = new Map<string, number>();
  const classes = new Map<
    string,
    {
      count: number;
      admitted: number;
      toAdmit: number;
      finished: number;
      toFinish: number;
      evictions: number;
      evictedUnitMs: number;
    }
  >();
  for (const r of records) {
    if (r.finishedAt === null) unfinished++;
    else end = Math.max(end, r.finishedAt);
    const { unitMs, approximated } = heldUnitMs(r);
    if (approximated) usageApproximated++;
    used.set(r.queue, (used.get(r.queue) ?? 0) + unitMs);
    let c = classes.get(r.className);
    if (c === undefined) {
      c = { count: 0, admitted: 0, toAdmit: 0, finished: 0, toFinish: 0, evictions: 0, evictedUnitMs: 0 };
      classes.set(r.className, c);
    }
    c.count++;
    c.evictions += r.evictions;
    c.evictedUnitMs += evictedUnitMs(r);
    if (r.admittedAt !== null) {
      c.admitted++;
      c.toAdmit += r.admittedAt - r.createdAt;
    }
    if (r.finishedAt !== null) {
      c.finished++;
      c.toFinish += r.finishedAt - r.createdAt;
    }
  }
  const wallMs = end - extras.start;
  const byClass = new Map<string, QueueClassFigures & { unitMs: number }>();
  for (const q of queues) {
    let f = byClass.get(q.className);
    if (f === undefined) {
      f = { className: q.className, queues: 0, nominal: 0, usagePercent: 0, unitMs: 0 };
      byClass.set(q.className, f);
    }
    f.queues++;
    f.nominal += q.nominal;
    f.unitMs += used.get(q.name) ?? 0;
  }
  const queueClasses = [...byClass.values()].map(({ unitMs, ...f }) => ({
    ...f,
    usagePercent: f.nominal > 0 && wallMs > 0 ? (100 * unitMs) / (f.nominal * wallMs) : 0,
  }));
  return {
    wallMs,
    workloads: records.length,
    unfinished,
    queueClasses,
    lowestUsagePercent: Math.min(...queueClasses.map((q) => q.usagePercent)),
    workloadClasses: [...classes.entries()].map(([className, c]) => ({
      className,
      count: c.count,
      avgTimeToAdmissionMs: mean(c.toAdmit, c.admitted),
      avgTimeToFinishMs: mean(c.toFinish, c.finished),
      evictions: c.evictions,
      evictedUnitSeconds: c.evictedUnitMs / 1000,
    })),
    admissions: extras.admissions,
    admissionsPerSecond: wallMs > 0 ? extras.admissions / (wallMs / 1000) : 0,
    decisionP99Ms: extras.decisionP99Ms,
    usageApproximated,
  };
}
