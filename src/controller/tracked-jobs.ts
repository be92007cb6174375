/**
 * The controller's in-memory model of jobs: every unfinished job, and every finished one until
 * its cleanup is confirmed. Decisions and the read side come from here, never from a table.
 */
import { JOBS_RESOURCE } from '../domain/cluster-queue.js';
import type { JobRecord, JobSpec, JobState } from '../domain/job.js';
import { parseAmounts, type Amounts } from '../domain/quantity.js';
import type { RuntimeHistory, RuntimeSubject } from '../domain/runtime-history.js';
import type { Workload } from '../scheduler/types.js';
import { dependenciesOf, type Dependency } from '../domain/dependency.js';
import { retryHead, retryPolicy, type RetryPolicy } from '../domain/retry.js';
import { Gang } from './gang.js';
import type { TrackedJob } from './model.js';

/**
 * What a job counts against quota, as integer amounts: its requests once per worker (a gang of N
 * holds N workers' worth), and the implicit `jobs: 1`.
 */
export function jobAmounts(spec: JobSpec): Amounts {
  const workers = spec.workers ?? 1;
  const amounts: Amounts = {};
  for (const [name, amount] of Object.entries(parseAmounts(spec.requests, 'requests')))
    amounts[name] = amount * workers;
  // Added in place rather than spread into a new object: a spread's copy got a hidden class of its
  // own per job (with its descriptors and enum cache, ~230 bytes a job: issue #18).
  amounts[JOBS_RESOURCE] = 1;
  return amounts;
}

/**
 * What a job's spec makes of it in the model, made once per spec object and shared, frozen, by the
 * jobs that have that spec: an array's tasks share one (service/jobs/array-submission.ts), and so do
 * the jobs read back on start with the same spec text (store/queries/jobs.ts, activeJobPages).
 * With a million jobs queued, objects and arrays of their own cost each job ~0.3 KiB (issue #18).
 */
interface FromSpec {
  requests: Amounts;
  retryPolicy: RetryPolicy;
  dependencies: Dependency[];
  resources: string[];
  artifacts: string[];
}

const fromSpecs = new WeakMap<JobSpec, FromSpec>();
const NO_STRINGS: string[] = frozen([]);
const NO_DEPENDENCIES: Dependency[] = frozen([]);

/** `value`, frozen: shared between jobs, it must never be changed in place (that throws). */
function frozen<T extends object>(value: T): T {
  return Object.freeze(value);
}

function fromSpec(spec: JobSpec): FromSpec {
  let d = fromSpecs.get(spec);
  if (d === undefined) {
    const dependencies = dependenciesOf(spec);
    d = {
      requests: frozen(jobAmounts(spec)),
      retryPolicy: frozen(retryPolicy(spec)),
      dependencies: dependencies.length === 0 ? NO_DEPENDENCIES : frozen(dependencies),
      resources: spec.resources.length === 0 ? NO_STRINGS : frozen([...spec.resources].sort()),
      artifacts: spec.artifacts?.length ? frozen([...spec.artifacts]) : NO_STRINGS,
    };
    fromSpecs.set(spec, d);
  }
  return d;
}

/**
 * The holdings of every job that has none of its own yet (most jobs, those queued): one shared
 * empty set rather than one per job (~190 bytes each, with its table: issue #18). Nothing may be
 * added to it — `ownHoldings` gives the job a set of its own first; adding throws.
 */
class NoHoldings extends Set<string> {
  override add(): never {
    throw new Error('a holding added to the shared empty set: use ownHoldings(job)');
  }
  override delete(): boolean {
    return false;
  }
  override clear(): void {}
}
const NO_HOLDINGS: Set<string> = new NoHoldings();

/** The job's holdings, as a set of its own that may be added to. */
export function ownHoldings(job: TrackedJob): Set<string> {
  if (job.holdings === NO_HOLDINGS) job.holdings = new Set();
  return job.holdings;
}

/** What one of the job's workers requests (its amounts hold every worker's). */
export function workerRequests(job: TrackedJob): Amounts {
  if (job.workers === 1) return job.requests;
  const per: Amounts = {};
  for (const [name, amount] of Object.entries(job.requests))
    if (name !== JOBS_RESOURCE) per[name] = amount / job.workers;
  return per;
}

/** What the runtime history knows a job by (domain/runtime-history.ts). */
export const runtimeSubject = (job: TrackedJob): RuntimeSubject => ({
  project: job.project,
  name: job.name,
  target: job.target,
  queue: job.queue,
  timeoutSeconds: job.timeoutSeconds,
});

/** How long jobs like `job` ran (capped by its timeout), or null when none has been seen. */
function predictedMs(job: TrackedJob, runtimes: RuntimeHistory): number | null {
  const e = runtimes.expected(runtimeSubject(job));
  return e.basis === 'similar' ? e.ms : null;
}

/**
 * The job as the scheduler sees it; with `runtimes`, its runtime as predicted when it joins the
 * queue (what a Backfill queue with `estimates: learned` plans with).
 */
export const workloadOf = (job: TrackedJob, runtimes?: RuntimeHistory): Workload => ({
  id: job.id,
  queue: job.queue,
  project: job.project,
  priority: job.priority,
  createdAt: job.createdAt,
  requests: job.requests,
  timeoutMs: job.timeoutSeconds === null ? null : job.timeoutSeconds * 1000,
  expectedMs: runtimes === undefined ? null : predictedMs(job, runtimes),
  ...(job.interactive ? { interactive: true } : {}),
});

export class TrackedJobs {
  private readonly jobs = new Map<number, TrackedJob>();
  /** Finished jobs still tracked because their cleanup is not confirmed. */
  private readonly finished = new Set<number>();
  /** Unfinished jobs with a worker: what resync watches (heartbeats, stops, timeouts). */
  readonly withWorker = new Set<TrackedJob>();
  /** Jobs in state running, per cluster queue (the scheduler counts admitted and running as one). */
  private readonly runningIn = new Map<string, number>();
  /** Admissions this controller made since it started, per cluster queue (a counter that only grows). */
  private readonly admissionsIn = new Map<string, number>();
  /** Jobs in state queued, per project: what its `maxQueued` limits. */
  private readonly queuedOf = new Map<string, number>();
  /** Jobs in state queued per cluster queue, those outside the scheduler too (the metrics' held). */
  private readonly queuedIn = new Map<string, number>();
  /** Jobs admitted (holding quota, not yet running) and running, per project (the metrics). */
  private readonly admittedOf = new Map<string, number>();
  private readonly runningOf = new Map<string, number>();
  /**
   * The start first estimated for each job that was shown one while it waited (ms): what the
   * estimates' accuracy is measured against at its admission (start-estimates.ts, loop.ts).
   */
  readonly estimated = new Map<number, number>();
  /** Per job, the jobs waiting for it to end. */
  private readonly dependents = new Map<number, Set<number>>();
  /** Jobs handed to the scheduler and not yet admitted or withdrawn: a pass has work if any. */
  inScheduler = 0;
  /** Jobs waiting out a retry's backoff, outside the scheduler (their start is estimated too). */
  readonly backingOff = new Set<TrackedJob>();

  constructor(private readonly now: () => number) {}

  track(r: JobRecord): TrackedJob {
    const derived = fromSpec(r.spec);
    const job: TrackedJob = {
      id: r.id,
      name: r.name,
      createdBy: r.createdBy,
      submittedRequests: r.spec.requests,
      queuedAt: r.queuedAt ?? r.createdAt,
      command: r.spec.command,
      env: r.spec.env,
      image: r.spec.image,
      pinning: false,
      imageChecked: false,
      artifacts: derived.artifacts,
      interactive: r.spec.interactive === true,
      arrayId: r.arrayId,
      arrayIndex: r.arrayIndex,
      arrayThrottle: r.arrayId === null ? null : (r.spec.arrayThrottle ?? null),
      throttled: false,
      attempts: r.attempts,
      retryPolicy: derived.retryPolicy,
      retriesUsed: { job: r.retried, infrastructure: r.infraRetried },
      retryAt: r.retryAt,
      retryTimer: null,
      retryAfter: retryHead(r.reason),
      project: r.project,
      queue: r.clusterQueue,
      target: r.target,
      priority: r.priority,
      createdAt: r.createdAt,
      requests: derived.requests,
      state: r.state,
      timeoutSeconds: r.spec.timeoutSeconds,
      dependsOn: r.spec.dependsOn,
      cancelRequested: r.cancelRequested,
      admittedAt: r.admittedAt,
      startedAt: r.startedAt,
      borrowed: r.borrowed === null ? null : parseAmounts(r.borrowed, 'borrowed'),
      workerId: null,
      lastHeartbeat: this.now(),
      stopping: null,
      stopReason: '',
      stopRequestedAt: 0,
      dependencies: derived.dependencies,
      waitingFor: NO_DEPENDENCIES,
      resources: derived.resources,
      acquired: 0,
      holdings: NO_HOLDINGS,
      waitingIn: null,
      createFailures: 0,
      // A queued job never holds one: requeue and finish delete it with the state change.
      mayHoldToken: r.state !== 'queued',
      ending: null,
      cleaning: false,
      parkedFor: null,
      workerWait: null,
      workers: r.spec.workers ?? 1,
      gang: null,
      starting: null,
    };
    this.jobs.set(job.id, job);
    this.countState(job, 1);
    return job;
  }

  /** The tracked job `id`, finished or not. */
  get(id: number): TrackedJob | undefined {
    return this.jobs.get(id);
  }

  /** The job `id` if it is tracked and has not finished. */
  unfinished(id: number): TrackedJob | undefined {
    return this.finished.has(id) ? undefined : this.jobs.get(id);
  }

  isFinished(id: number): boolean {
    return this.finished.has(id);
  }

  /** It reached a terminal state; it stays tracked until its cleanup is confirmed. */
  markFinished(job: TrackedJob): void {
    this.withWorker.delete(job);
    this.finished.add(job.id);
  }

  /**
   * The job has worker `workerId` from now on: resync watches it, and its agent has until
   * `heartbeatFrom` plus the heartbeat period to be heard from.
   */
  assignWorker(job: TrackedJob, workerId: number, heartbeatFrom = this.now()): void {
    job.workerId = workerId;
    job.lastHeartbeat = heartbeatFrom;
    // A gang taken over while running: its members are past their rendezvous.
    if (job.workers > 1) job.gang = new Gang(job.workers, heartbeatFrom, job.state === 'running');
    this.withWorker.add(job);
  }

  /** The job's run is over (it is requeued): it has no worker any more. */
  dropWorker(job: TrackedJob): void {
    job.workerId = null;
    job.gang = null;
    this.withWorker.delete(job);
  }

  /** Every change of a tracked job's state goes through here, so the running counts stay true. */
  setState(job: TrackedJob, state: JobState): void {
    if (state === 'admitted') this.admissionsIn.set(job.queue, this.admissions(job.queue) + 1);
    this.countState(job, -1);
    job.state = state;
    this.countState(job, 1);
  }

  /** Counts the job in (1) or out of (-1) the tallies of its state, its queue and its project. */
  private countState(job: TrackedJob, delta: 1 | -1): void {
    switch (job.state) {
      case 'queued':
        count(this.queuedOf, job.project, delta);
        count(this.queuedIn, job.queue, delta);
        return;
      case 'admitted':
        count(this.admittedOf, job.project, delta);
        return;
      case 'running':
        count(this.runningIn, job.queue, delta);
        count(this.runningOf, job.project, delta);
        return;
    }
  }

  running(queue: string): number {
    return this.runningIn.get(queue) ?? 0;
  }

  /** How many jobs this controller has admitted to `queue` since it started. */
  admissions(queue: string): number {
    return this.admissionsIn.get(queue) ?? 0;
  }

  /** The project's jobs in state queued. */
  queued(project: string): number {
    return this.queuedOf.get(project) ?? 0;
  }

  /** Jobs queued in `queue`, whether the scheduler holds them or they wait outside it. */
  queuedInQueue(queue: string): number {
    return this.queuedIn.get(queue) ?? 0;
  }

  /** Per project with unfinished jobs: how many are queued, admitted (not yet running) and running. */
  *perProject(): Iterable<{ project: string; queued: number; admitted: number; running: number }> {
    const projects = new Set([...this.queuedOf.keys(), ...this.admittedOf.keys(), ...this.runningOf.keys()]);
    for (const project of projects)
      yield {
        project,
        queued: this.queuedOf.get(project) ?? 0,
        admitted: this.admittedOf.get(project) ?? 0,
        running: this.runningOf.get(project) ?? 0,
      };
  }

  /** The job is filed under another project (its own was deleted): its counts go along. */
  moveProject(job: TrackedJob, project: string): void {
    this.countState(job, -1);
    job.project = project;
    this.countState(job, 1);
  }

  /** The queued job moves to another cluster queue with its project: its counts go along. */
  moveQueue(job: TrackedJob, queue: string): void {
    this.countState(job, -1);
    job.queue = queue;
    this.countState(job, 1);
  }

  forget(id: number): void {
    const job = this.jobs.get(id);
    if (job?.retryTimer) clearTimeout(job.retryTimer);
    if (job) this.backingOff.delete(job);
    if (job) this.countState(job, -1);
    if (job) this.withWorker.delete(job);
    this.estimated.delete(id);
    this.jobs.delete(id);
    this.finished.delete(id);
  }

  /** The queued jobs (a walk over every tracked job: for changes to projects, which are rare). */
  *allQueued(): Iterable<TrackedJob> {
    for (const job of this.jobs.values()) if (job.state === 'queued' && !this.finished.has(job.id)) yield job;
  }

  /** `id` waits for `dependency` to end. */
  addDependent(dependency: number, id: number): void {
    let set = this.dependents.get(dependency);
    if (!set) this.dependents.set(dependency, (set = new Set()));
    set.add(id);
  }

  /** The jobs that waited for `dependency`, which has ended; forgotten here. */
  takeDependents(dependency: number): Iterable<number> {
    const set = this.dependents.get(dependency);
    this.dependents.delete(dependency);
    return set ?? [];
  }
}

/** Adds `delta` to `key`'s count, dropping counts that reach zero. */
function count(counts: Map<string, number>, key: string, delta: 1 | -1): void {
  const n = (counts.get(key) ?? 0) + delta;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
