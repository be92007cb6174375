/**
 * `berth simulate --swf FILE`: a Standard Workload Format trace (the Parallel Workloads Archive's
 * format: Feitelson, Tsafrir and Krakov 2014) as a scenario for the simulator, and the figures a
 * batch scheduler is judged by on it. Pure: the caller reads the file.
 *
 * One queue whose quota is the trace's `MaxProcs` (or `procs`) cpu; each job requests its
 * processors (requested, else allocated) and runs its recorded run time in full: a trace records
 * what happened, so the replay never stops a job at its requested time. The requested time is the
 * job's timeout in berth's terms, what Backfill plans with; a job without one is planned with the
 * trace's longest requested time (as Slurm plans a job without `--time` with its partition's
 * limit). A job still running past it is expected to end a second later (backfill.ts). Records
 * with a run time ≤ 0, no processor count, or more processors than the machine are skipped.
 */
import type { QueueingStrategy, RuntimeEstimates } from '../domain/cluster-queue.js';
import { RuntimeHistory, type RuntimeSubject } from '../domain/runtime-history.js';
import type { ExpandedScenario, PlannedWorkload } from './scenario.js';
import type { WorkloadRecord } from './report.js';
import { simulate, type SimulateOptions } from './simulator.js';

/** One job of the trace; times in seconds. */
export interface SwfJob {
  /** Field 1: the job number. */
  id: number;
  submit: number;
  run: number;
  procs: number;
  /** Field 9, or -1 when unknown. */
  requestedTime: number;
  /** Field 12, or -1 when unknown: whose runtimes predict the job's (`estimates: learned`). */
  user: number;
}

export interface SwfTrace {
  /** The header's MaxProcs (else MaxNodes); null when it names neither. */
  maxProcs: number | null;
  jobs: SwfJob[];
}

/** Parses an SWF text: `;` lines are the header, every other non-blank line one job of 18 fields. */
export function parseSwf(text: string): SwfTrace {
  let maxProcs: number | null = null;
  let maxNodes: number | null = null;
  const jobs: SwfJob[] = [];
  let line = 0;
  for (const raw of text.split('\n')) {
    line++;
    const s = raw.trim();
    if (s === '') continue;
    if (s.startsWith(';')) {
      const m = /^;\s*(MaxProcs|MaxNodes):\s*(\d+)/.exec(s);
      if (m?.[1] === 'MaxProcs') maxProcs = Number(m[2]);
      else if (m?.[1] === 'MaxNodes') maxNodes = Number(m[2]);
      continue;
    }
    const f = s.split(/\s+/).map(Number);
    if (f.length < 9 || f.slice(0, 9).some((x) => !Number.isFinite(x)))
      throw new RangeError(`line ${line}: expected 18 numeric fields, got "${s.slice(0, 60)}"`);
    const at = (i: number) => f[i] as number;
    const requested = at(7);
    jobs.push({
      id: at(0),
      submit: at(1),
      run: at(3),
      procs: requested > 0 ? requested : at(4),
      requestedTime: at(8),
      user: f.length > 11 ? at(11) : -1,
    });
  }
  return { maxProcs: maxProcs ?? maxNodes, jobs };
}

export interface SwfPlanOptions {
  /** The machine's processors: the queue's quota (default: the trace's MaxProcs). */
  procs?: number;
  strategy?: QueueingStrategy;
  /** What Backfill plans with: the requested times (default), or also the runtimes learned. */
  estimates?: RuntimeEstimates;
  /** Backfill: how many reservations a pass keeps (default 1, EASY; more: conservative). */
  reservations?: number;
}

export interface SwfPlan {
  plan: ExpandedScenario;
  /** The jobs replayed, in the plan's order (`plan.workloads[i]` is `jobs[i]`). */
  jobs: SwfJob[];
  procs: number;
  /** Records left out: run time ≤ 0, no processor count, or more processors than the machine. */
  skipped: number;
}

export const SWF_QUEUE = 'swf';
const SECOND = 1000;

/** The trace as a scenario: one queue of `procs` cpu, one workload per job (ms from the trace's 0). */
export function swfPlan(trace: SwfTrace, opts: SwfPlanOptions = {}): SwfPlan {
  const procs = opts.procs ?? trace.maxProcs;
  if (procs === null || !(procs > 0))
    throw new RangeError('the trace names no MaxProcs: give the machine size (--procs N)');
  const kept = trace.jobs.filter((j) => j.run > 0 && j.procs > 0 && j.procs <= procs);
  // Stable: jobs submitted at the same second keep the trace's order.
  kept.sort((a, b) => a.submit - b.submit);
  const longest = kept.reduce((m, j) => Math.max(m, j.requestedTime), 0);
  const workloads: PlannedWorkload[] = kept.map((j, i) => {
    const estimate = j.requestedTime > 0 ? j.requestedTime : longest;
    return {
      seq: i + 1,
      name: `job-${j.id}`,
      queue: SWF_QUEUE,
      cohort: SWF_QUEUE,
      queueClass: SWF_QUEUE,
      className: 'job',
      set: 0,
      at: j.submit * SECOND,
      runtimeMs: j.run * SECOND,
      priority: 0,
      request: j.procs,
      ...(estimate > 0 ? { timeoutMs: estimate * SECOND } : {}),
    };
  });
  const plan: ExpandedScenario = {
    resource: 'cpu',
    queues: [
      {
        name: SWF_QUEUE,
        cohort: SWF_QUEUE,
        className: SWF_QUEUE,
        nominal: procs,
        borrowingLimit: null,
        reclaimWithinCohort: 'Never',
        withinClusterQueue: 'Never',
        strategy: opts.strategy ?? 'Backfill',
        estimates: opts.estimates ?? 'requested',
        ...(opts.reservations === undefined ? {} : { reservations: opts.reservations }),
      },
    ],
    cohorts: [SWF_QUEUE],
    workloads,
  };
  return { plan, jobs: kept, procs, skipped: trace.jobs.length - kept.length };
}

/** One replayed job, in trace seconds. */
export interface SwfRun {
  id: number;
  submit: number;
  start: number;
  end: number;
  procs: number;
}

/** Bounded slowdown's threshold: jobs shorter than this count as this long (s). */
export const BSLD_TAU = 10;

export interface SwfSummary {
  jobs: number;
  skipped: number;
  avgWait: number;
  maxWait: number;
  /** Mean of max(1, (wait + run) / max(run, τ)), τ = 10 s. */
  avgBoundedSlowdown: number;
  /** Σ procs × run / (procs of the machine × (last end − first submit)), 0–1. */
  utilization: number;
}

/** The figures of a replay (or of any schedule of the same jobs). */
export function swfSummary(runs: readonly SwfRun[], procs: number, skipped: number): SwfSummary {
  let wait = 0;
  let maxWait = 0;
  let bsld = 0;
  let work = 0;
  let first = Infinity;
  let last = -Infinity;
  for (const r of runs) {
    const w = r.start - r.submit;
    const run = r.end - r.start;
    wait += w;
    if (w > maxWait) maxWait = w;
    bsld += Math.max(1, (w + run) / Math.max(run, BSLD_TAU));
    work += run * r.procs;
    if (r.submit < first) first = r.submit;
    if (r.end > last) last = r.end;
  }
  const n = runs.length;
  return {
    jobs: n,
    skipped,
    avgWait: n === 0 ? 0 : wait / n,
    maxWait,
    avgBoundedSlowdown: n === 0 ? 0 : bsld / n,
    utilization: n === 0 || last <= first ? 0 : work / (procs * (last - first)),
  };
}

/** The simulator's records of an SWF plan as trace runs (every job of a trace finishes). */
export function swfRuns(p: SwfPlan, records: readonly WorkloadRecord[]): SwfRun[] {
  return p.jobs.map((j, i) => {
    const r = records[i];
    if (r === undefined || r.admittedAt === null || r.finishedAt === null)
      throw new Error(`job ${j.id} of the trace never ran: the replay did not finish`);
    return {
      id: j.id,
      submit: j.submit,
      start: r.admittedAt / SECOND,
      end: r.finishedAt / SECOND,
      procs: j.procs,
    };
  });
}

/** `--records FILE`: one CSV line per job, `id,submit,start,end,procs`, in trace seconds. */
export function swfCsv(runs: readonly SwfRun[]): string {
  return (
    [
      'id,submit,start,end,procs',
      ...runs.map((r) => `${r.id},${r.submit},${r.start},${r.end},${r.procs}`),
    ].join('\n') + '\n'
  );
}

/**
 * `estimates: learned`: a job's runtime predicted as the server predicts it, from the runtimes of
 * similar jobs finished before it was submitted (domain/runtime-history.ts), a trace's user
 * standing for the server's project, name and target; a job of a user with none has no prediction.
 */
function learnedRuntimes(p: SwfPlan): SimulateOptions {
  const history = new RuntimeHistory();
  const subject = (w: PlannedWorkload): RuntimeSubject => ({
    project: String(p.jobs[w.seq - 1]?.user ?? -1),
    name: '',
    target: '',
    queue: w.queue,
    timeoutSeconds: w.timeoutMs === undefined ? null : w.timeoutMs / SECOND,
  });
  return {
    onFinished: (w, ranMs) => history.record(subject(w), ranMs),
    expectedMs: (w) => {
      const e = history.expected(subject(w));
      return e.basis === 'similar' ? e.ms : null;
    },
  };
}

export interface SwfReplay {
  summary: SwfSummary;
  runs: SwfRun[];
  procs: number;
  /** Real time the simulation took, ms (parsing not included). */
  elapsedMs: number;
}

/** Replays `trace` on berth's scheduler with a virtual clock. */
export function replaySwf(trace: SwfTrace, opts: SwfPlanOptions = {}): SwfReplay {
  const started = performance.now();
  const p = swfPlan(trace, opts);
  const result = simulate(p.plan, opts.estimates === 'learned' ? learnedRuntimes(p) : {});
  const runs = swfRuns(p, result.records);
  const elapsedMs = performance.now() - started;
  return { summary: swfSummary(runs, p.procs, p.skipped), runs, procs: p.procs, elapsedMs };
}
