/**
 * The controller: a level-triggered reconcile loop that drives every job through
 * queued → admitted → running → succeeded | failed | cancelled.
 *
 * It owns the in-memory model (the pure scheduler plus the jobs that are not finished), asks the
 * scheduler for decisions, records each transition with its event in one transaction, and then
 * acts: creates and destroys workers through factories. Events (a submission, an agent report)
 * wake it at once; a periodic resync catches anything missed (lost heartbeats, stuck stops,
 * failed destroys). On start it rebuilds the model from the store.
 *
 * Acquisition order (no deadlock): quota first (admission by the scheduler), then a worker.
 * A job holds its quota while it waits for a worker and never holds a worker while waiting for
 * anything else, so no cycle of waiting jobs can form.
 */
import type { FinishRequest, StartResponse } from '../agent/protocol.js';
import { ConflictError, UnauthorizedError } from '../domain/errors.js';
import { isTerminal, type ActiveJob, type JobSpec, type JobState } from '../domain/job.js';
import { formatAmounts, parseAmounts, type Amounts } from '../domain/quantity.js';
import { JOBS_RESOURCE } from '../domain/cluster-queue.js';
import type { Factory, FactoryListener, WorkerHandle } from '../factories/factory.js';
import type { Decision, Explanation, QueueFigures, QueueModel, SchedulerApi } from '../scheduler/types.js';
import type { TargetConfig } from '../server/config.js';
import { newToken, hashToken } from '../service/tokens.js';
import { listClusterQueues } from '../store/queries/cluster-queues.js';
import { appendEvent } from '../store/queries/events.js';
import { findJobRow, loadActiveJobRows, updateJob, type JobUpdate } from '../store/queries/jobs.js';
import { deleteJobTokens, insertToken } from '../store/queries/tokens.js';
import { insertWorker, loadLiveWorkerRows, updateWorker } from '../store/queries/workers.js';
import type { JobRow } from '../store/schema.js';
import type { Db, Store } from '../store/store.js';
import type { LogStore } from './log-store.js';
import { toQueueModel } from './queue-model.js';
import { Waitlist } from './waitlist.js';

export interface ControllerOptions {
  store: Store;
  scheduler: SchedulerApi;
  factories: Map<string, Factory>;
  targets: Record<string, TargetConfig>;
  logs: LogStore;
  /** Where agents reach the server (known once it listens). */
  serverUrl: () => string;
  now: () => number;
  graceSeconds: number;
  heartbeatSeconds: number;
  resyncMs?: number;
  onError?: (err: unknown, what: string) => void;
}

type StopKind = 'cancel' | 'preempt' | 'drain';

interface Tracked extends ActiveJob {
  name: string;
  /** Times the job was evicted and requeued. */
  attempts: number;
  workerId: number | null;
  lastHeartbeat: number;
  stopping: StopKind | null;
  stopReason: string;
  stopRequestedAt: number;
  /** Set while the job waits for its dependencies. */
  waitingFor: number[];
}

interface WorkerRecord {
  id: number;
  jobId: number;
  factory: string;
  handle: WorkerHandle | null;
  destroying: boolean;
  destroyAttempts: number;
  nextDestroyAt: number;
}

export class Controller implements FactoryListener {
  private readonly jobs = new Map<number, Tracked>();
  private readonly workers = new Map<number, WorkerRecord>();
  private readonly waitlists = new Map<string, Waitlist<Tracked>>();
  private readonly inUse = new Map<string, number>();
  private readonly stopWaiters = new Map<number, Set<() => void>>();
  private readonly dependents = new Map<number, Set<number>>();
  private readonly finishedJobs = new Set<number>();
  /** The queues as the scheduler knows them, for submission checks without a store read. */
  private readonly queues = new Map<string, QueueModel>();
  private wakeScheduled = false;
  private ticking = false;
  private tickAgain = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly o: ControllerOptions) {
    for (const name of o.factories.keys()) {
      this.waitlists.set(name, new Waitlist());
      this.inUse.set(name, 0);
    }
  }

  // ---------------------------------------------------------------- life cycle

  /** Rebuilds the model from the store, reconciles leftover workers, and starts the loop. */
  async start(): Promise<void> {
    const db = this.o.store.db;
    for (const q of await listClusterQueues(db)) this.upsertQueue(toQueueModel(q));

    // Every worker not confirmed destroyed belongs to a previous run: its agent died with that
    // server, so destroy it. Jobs that had started on one cannot be resumed (and must not run
    // twice): they fail. Jobs that had not started keep their quota and get a new worker.
    const lostWorkers = await loadLiveWorkerRows(db);
    const jobsWithLostWorkers = new Set<number>();
    for (const w of lostWorkers) {
      const record: WorkerRecord = {
        id: Number(w.id),
        jobId: Number(w.job_id),
        factory: w.factory,
        handle: w.handle ? (JSON.parse(w.handle) as WorkerHandle) : null,
        destroying: false,
        destroyAttempts: 0,
        nextDestroyAt: 0,
      };
      this.workers.set(record.id, record);
      this.inUse.set(record.factory, (this.inUse.get(record.factory) ?? 0) + 1);
      jobsWithLostWorkers.add(record.jobId);
    }

    for (const row of await loadActiveJobRows(db))
      await this.restore(row, jobsWithLostWorkers.has(Number(row.id)));
    for (const w of [...this.workers.values()]) void this.destroyWorker(w);
    this.resyncTimer = setInterval(() => this.resync(), this.o.resyncMs ?? 1000);
    this.resyncTimer.unref();
    this.wake();
  }

  private async restore(row: JobRow, workerLost: boolean): Promise<void> {
    const id = Number(row.id);
    const state = row.state as JobState;
    if (isTerminal(state)) {
      if (!workerLost) await this.markCleanedUp(id);
      return;
    }
    const job = this.track(row);
    if (state === 'running') {
      await this.finishJob(job, 'failed', 'worker lost: the server restarted while the job ran', null);
      return;
    }
    if (state === 'admitted') {
      job.workerId = null;
      this.o.scheduler.restoreAdmitted({
        id,
        queue: job.queue,
        project: job.project,
        priority: job.priority,
        createdAt: job.createdAt,
        requests: job.requests,
        admittedAt: job.admittedAt ?? this.o.now(),
        borrowed: job.borrowed ?? {},
      });
      this.waitlistFor(job)?.add(job);
      return;
    }
    await this.enqueueWhenReady(job);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.o.logs.close();
    clearInterval(this.resyncTimer);
    for (const waiters of this.stopWaiters.values()) for (const w of waiters) w();
    await Promise.all([...this.o.factories.values()].map((f) => f.close()));
  }

  private track(row: JobRow): Tracked {
    const spec = JSON.parse(row.spec) as JobSpec;
    const job: Tracked = {
      id: Number(row.id),
      name: row.name,
      attempts: row.attempts,
      project: row.project,
      queue: row.cluster_queue,
      target: row.target,
      priority: row.priority,
      createdAt: Number(row.created_at),
      requests: jobAmounts(spec),
      state: row.state as JobState,
      timeoutSeconds: spec.timeoutSeconds,
      dependsOn: spec.dependsOn,
      cancelRequested: row.cancel_requested === 1,
      admittedAt: row.admitted_at === null ? null : Number(row.admitted_at),
      startedAt: row.started_at === null ? null : Number(row.started_at),
      borrowed:
        row.borrowed === null
          ? null
          : parseAmounts(JSON.parse(row.borrowed) as Record<string, string>, 'borrowed'),
      workerId: null,
      lastHeartbeat: this.o.now(),
      stopping: null,
      stopReason: '',
      stopRequestedAt: 0,
      waitingFor: [],
    };
    this.jobs.set(job.id, job);
    return job;
  }

  // ---------------------------------------------------------------- inputs from the API

  /** A job was committed to the store as queued. */
  async jobSubmitted(row: JobRow): Promise<void> {
    const job = this.track(row);
    await this.enqueueWhenReady(job);
    this.wake();
  }

  /** Hands the job to the scheduler, or parks it until its dependencies succeed. */
  private async enqueueWhenReady(job: Tracked): Promise<void> {
    const waiting: number[] = [];
    for (const dep of job.dependsOn) {
      const active = this.jobs.get(dep);
      let state: JobState | undefined = active && !this.finishedJobs.has(dep) ? active.state : undefined;
      if (state === undefined)
        state = (await findJobRow(this.o.store.db, dep))?.state as JobState | undefined;
      if (state === 'succeeded') continue;
      if (state === undefined || isTerminal(state)) {
        await this.finishJob(job, 'cancelled', `dependency job ${dep} ${state ?? 'does not exist'}`, null);
        return;
      }
      waiting.push(dep);
    }
    job.waitingFor = waiting;
    if (waiting.length > 0) {
      for (const dep of waiting) {
        let set = this.dependents.get(dep);
        if (!set) this.dependents.set(dep, (set = new Set()));
        set.add(job.id);
      }
      return;
    }
    this.o.scheduler.enqueue({
      id: job.id,
      queue: job.queue,
      project: job.project,
      priority: job.priority,
      createdAt: job.createdAt,
      requests: job.requests,
    });
  }

  /** Cancels a job in whatever state it is; 409 if it has already finished. */
  async cancel(id: number, by: string): Promise<void> {
    const job = this.jobs.get(id);
    if (!job || this.finishedJobs.has(id)) throw new ConflictError(`job ${id} has already finished`);
    const reason = `cancelled by ${by}`;
    await this.o.store.transaction(async (db) => {
      await updateJob(db, id, { cancel_requested: 1 });
      await this.event(db, job, 'cancel-requested', reason);
    });
    job.cancelRequested = true;
    if (job.state === 'queued') {
      this.o.scheduler.withdraw(id);
      await this.finishJob(job, 'cancelled', reason, null);
    } else if (job.workerId === null) {
      this.waitlistFor(job)?.remove(id);
      this.o.scheduler.release(id);
      await this.finishJob(job, 'cancelled', reason, null);
    } else {
      this.requestStop(job, 'cancel', reason);
    }
    this.wake();
  }

  queueChanged(name: string, queue: Parameters<typeof toQueueModel>[0] | undefined): void {
    if (queue) this.upsertQueue(toQueueModel(queue));
    else {
      this.queues.delete(name);
      this.o.scheduler.removeQueue(name);
    }
    this.wake();
  }

  private upsertQueue(model: QueueModel): void {
    this.queues.set(model.name, model);
    this.o.scheduler.upsertQueue(model);
  }

  /** Every cluster queue's model, as of the last committed change. */
  queueModels(): Iterable<QueueModel> {
    return this.queues.values();
  }

  // ---------------------------------------------------------------- the loop

  wake(): void {
    if (this.wakeScheduled || this.stopped) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      void this.tick();
    });
  }

  private async tick(): Promise<void> {
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = true;
    try {
      const decisions = this.o.scheduler.schedule(this.o.now());
      if (decisions.length > 0) await this.apply(decisions);
      this.dispatchWorkers();
    } catch (e) {
      this.o.onError?.(e, 'reconcile');
    } finally {
      this.ticking = false;
      if (this.tickAgain) {
        this.tickAgain = false;
        this.wake();
      } else {
        for (const w of this.idleWaiters.splice(0)) w();
      }
    }
  }

  private async apply(decisions: Decision[]): Promise<void> {
    const now = this.o.now();
    const admitted: Tracked[] = [];
    await this.o.store.transaction(async (db) => {
      for (const d of decisions) {
        if (d.kind !== 'admit') continue;
        const job = this.jobs.get(d.id);
        if (!job) continue;
        const borrowed = Object.keys(d.borrowed).length > 0 ? formatAmounts(d.borrowed) : null;
        const factory = this.o.targets[job.target]?.factory ?? '?';
        await updateJob(db, job.id, {
          state: 'admitted',
          admitted_at: now,
          borrowed: borrowed && JSON.stringify(borrowed),
          reason: `admitted; waiting for a worker from factory ${factory}`,
        });
        const borrowText = borrowed
          ? ` borrowing ${Object.entries(borrowed)
              .map(([r, q]) => `${r} ${q}`)
              .join(', ')}`
          : '';
        await this.event(
          db,
          job,
          'admitted',
          `admitted by cluster queue ${d.queue}${borrowText}`,
          borrowed ?? undefined,
        );
        job.state = 'admitted';
        job.admittedAt = now;
        job.borrowed = d.borrowed;
        admitted.push(job);
      }
    });
    for (const job of admitted) this.waitlistFor(job)?.add(job);
    for (const d of decisions) {
      if (d.kind === 'preempt') {
        for (const victimId of d.victims) {
          const victim = this.jobs.get(victimId);
          if (victim) await this.preempt(victim, 'preempt', `preempted by job ${d.preemptor}: ${d.reason}`);
        }
      } else if (d.kind === 'drain') {
        const job = this.jobs.get(d.id);
        if (job) await this.preempt(job, 'drain', d.reason);
      }
    }
  }

  /** Evicts an admitted job so it returns to its queue. */
  private async preempt(job: Tracked, kind: 'preempt' | 'drain', reason: string): Promise<void> {
    if (job.workerId === null) {
      this.waitlistFor(job)?.remove(job.id);
      await this.requeue(job, reason);
    } else {
      this.requestStop(job, kind, reason);
    }
  }

  private waitlistFor(job: Tracked): Waitlist<Tracked> | undefined {
    const factory = this.o.targets[job.target]?.factory;
    return factory === undefined ? undefined : this.waitlists.get(factory);
  }

  /** Gives waiting admitted jobs a worker wherever a factory has room. */
  private dispatchWorkers(): void {
    for (const [name, factory] of this.o.factories) {
      const waitlist = this.waitlists.get(name)!;
      while (waitlist.size > 0 && (this.inUse.get(name) ?? 0) < factory.capacity) {
        const job = waitlist.shift()!;
        this.inUse.set(name, (this.inUse.get(name) ?? 0) + 1);
        void this.createWorker(factory, job).catch((e: unknown) =>
          this.o.onError?.(e, `worker for job ${job.id}`),
        );
      }
    }
  }

  private async createWorker(factory: Factory, job: Tracked): Promise<void> {
    const now = this.o.now();
    const token = newToken('job');
    const workerId = await this.o.store.transaction(async (db) => {
      const id = await insertWorker(db, { jobId: job.id, factory: factory.name, target: job.target }, now);
      await insertToken(
        db,
        { hash: hashToken(token), userId: null, jobId: job.id, label: `job ${job.id}`, expiresAt: null },
        now,
      );
      await updateJob(db, job.id, { reason: `starting on worker ${id} (factory ${factory.name})` });
      await this.event(db, job, 'worker-creating', `worker ${id} requested from factory ${factory.name}`);
      return id;
    });
    const record: WorkerRecord = {
      id: workerId,
      jobId: job.id,
      factory: factory.name,
      handle: null,
      destroying: false,
      destroyAttempts: 0,
      nextDestroyAt: 0,
    };
    this.workers.set(workerId, record);
    job.workerId = workerId;
    job.lastHeartbeat = this.o.now();
    try {
      record.handle = await factory.create({
        workerId,
        jobId: job.id,
        target: job.target,
        url: this.o.serverUrl(),
        token,
      });
      await this.o.store.transaction(async (db) => {
        await updateWorker(
          db,
          workerId,
          { state: 'ready', handle: JSON.stringify(record.handle) },
          this.o.now(),
        );
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await this.o.store.transaction((db) =>
        updateWorker(db, workerId, { state: 'failed', error: message }, this.o.now()),
      );
      await this.endRun(job, {
        outcome: 'start-failed',
        exitCode: null,
        signal: null,
        message: `cannot create worker: ${message}`,
      });
    }
  }

  // ---------------------------------------------------------------- the agent protocol

  private jobForAgent(jobId: number): Tracked {
    const job = this.jobs.get(jobId);
    if (!job || this.finishedJobs.has(jobId) || job.workerId === null)
      throw new UnauthorizedError('this job is not running');
    return job;
  }

  async agentStart(jobId: number): Promise<StartResponse> {
    const job = this.jobForAgent(jobId);
    if (job.stopping) throw new ConflictError(`job ${jobId} is being stopped: ${job.stopReason}`);
    const row = (await findJobRow(this.o.store.db, jobId))!;
    const spec = JSON.parse(row.spec) as JobSpec;
    if (job.state !== 'running') {
      const now = this.o.now();
      await this.o.store.transaction(async (db) => {
        await updateJob(db, jobId, {
          state: 'running',
          started_at: now,
          reason: `running on worker ${job.workerId}`,
        });
        await this.event(db, job, 'started', `started on worker ${job.workerId}`);
      });
      job.state = 'running';
      job.startedAt = now;
    }
    job.lastHeartbeat = this.o.now();
    return {
      jobId,
      project: job.project,
      command: spec.command,
      env: spec.env,
      timeoutSeconds: spec.timeoutSeconds,
      graceSeconds: this.o.graceSeconds,
      heartbeatSeconds: this.o.heartbeatSeconds,
    };
  }

  async agentLogs(jobId: number, text: string): Promise<void> {
    this.jobForAgent(jobId);
    await this.o.logs.append(jobId, text);
  }

  /** Long poll: counts as a heartbeat; returns at once when the job must stop. */
  async agentHeartbeat(jobId: number, waitMs: number): Promise<{ cancel: boolean; reason?: string }> {
    const job = this.jobForAgent(jobId);
    job.lastHeartbeat = this.o.now();
    if (!job.stopping && waitMs > 0) {
      await new Promise<void>((resolve) => {
        let set = this.stopWaiters.get(jobId);
        if (!set) this.stopWaiters.set(jobId, (set = new Set()));
        const done = () => {
          clearTimeout(timer);
          set.delete(done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        set.add(done);
      });
      job.lastHeartbeat = this.o.now();
    }
    return job.stopping ? { cancel: true, reason: job.stopReason } : { cancel: false };
  }

  async agentFinish(jobId: number, result: FinishRequest): Promise<void> {
    const job = this.jobForAgent(jobId);
    await this.endRun(job, result);
  }

  private requestStop(job: Tracked, kind: StopKind, reason: string): void {
    if (job.stopping === 'cancel') return;
    job.stopping = kind;
    job.stopReason = reason;
    job.stopRequestedAt = this.o.now();
    for (const w of this.stopWaiters.get(job.id) ?? []) w();
  }

  /** A run ended (agent report, lost worker, failed start): decide what becomes of the job. */
  private async endRun(job: Tracked, r: FinishRequest): Promise<void> {
    if (this.finishedJobs.has(job.id)) return;
    for (const w of this.stopWaiters.get(job.id) ?? []) w();
    if (job.stopping === 'preempt' || job.stopping === 'drain') {
      await this.requeue(job, job.stopReason);
      return;
    }
    let state: JobState;
    let reason: string;
    if (job.stopping === 'cancel' || r.outcome === 'cancelled') {
      state = 'cancelled';
      reason = job.stopReason || r.message || 'cancelled';
    } else if (r.outcome === 'timeout') {
      state = 'failed';
      reason = r.message ?? `timed out after ${job.timeoutSeconds}s`;
    } else if (r.outcome === 'start-failed') {
      state = 'failed';
      reason = r.message ?? 'could not start';
    } else if (r.exitCode === 0) {
      state = 'succeeded';
      reason = 'exited with code 0';
    } else {
      state = 'failed';
      reason = r.signal
        ? `killed by ${r.signal} (exit code ${r.exitCode})`
        : `exited with code ${r.exitCode}`;
    }
    this.o.scheduler.release(job.id);
    await this.finishJob(job, state, reason, r.exitCode);
  }

  /** Puts an evicted job back in its queue at its old place; its worker is destroyed. */
  private async requeue(job: Tracked, reason: string): Promise<void> {
    const workerId = job.workerId;
    await this.o.store.transaction(async (db) => {
      await updateJob(db, job.id, {
        state: 'queued',
        reason,
        admitted_at: null,
        started_at: null,
        borrowed: null,
        attempts: job.attempts + 1,
      });
      await deleteJobTokens(db, job.id);
      await this.event(db, job, 'requeued', reason);
    });
    job.state = 'queued';
    job.attempts++;
    job.admittedAt = null;
    job.startedAt = null;
    job.borrowed = null;
    job.workerId = null;
    job.stopping = null;
    this.o.scheduler.requeue(job.id);
    if (workerId !== null) {
      const w = this.workers.get(workerId);
      if (w) void this.destroyWorker(w);
    }
    this.wake();
  }

  /** Records the terminal state, revokes the job's token, and starts cleanup. */
  private async finishJob(
    job: Tracked,
    state: JobState,
    reason: string,
    exitCode: number | null,
  ): Promise<void> {
    const now = this.o.now();
    const worker = job.workerId === null ? undefined : this.workers.get(job.workerId);
    const update: JobUpdate = { state, reason, exit_code: exitCode, finished_at: now };
    if (!worker) update.cleaned_up = 1;
    await this.o.store.transaction(async (db) => {
      await updateJob(db, job.id, update);
      await deleteJobTokens(db, job.id);
      await this.event(db, job, state, reason, exitCode === null ? undefined : { exitCode });
    });
    job.state = state;
    this.finishedJobs.add(job.id);
    this.waitlistFor(job)?.remove(job.id);
    this.o.logs.ended(job.id);
    if (worker) void this.destroyWorker(worker);
    else this.forget(job.id);
    await this.settleDependents(job.id, state);
    this.wake();
  }

  private async settleDependents(id: number, state: JobState): Promise<void> {
    const waiting = this.dependents.get(id);
    if (!waiting) return;
    this.dependents.delete(id);
    for (const depId of waiting) {
      const dep = this.jobs.get(depId);
      if (!dep || this.finishedJobs.has(depId)) continue;
      if (state !== 'succeeded') {
        await this.finishJob(dep, 'cancelled', `dependency job ${id} ${state}`, null);
        continue;
      }
      dep.waitingFor = dep.waitingFor.filter((d) => d !== id);
      if (dep.waitingFor.length === 0) await this.enqueueWhenReady(dep);
    }
  }

  private forget(jobId: number): void {
    this.jobs.delete(jobId);
    this.finishedJobs.delete(jobId);
    this.stopWaiters.delete(jobId);
  }

  // ---------------------------------------------------------------- cleanup

  private async destroyWorker(w: WorkerRecord): Promise<void> {
    if (w.destroying) return;
    w.destroying = true;
    const factory = this.o.factories.get(w.factory);
    try {
      await this.o.store.transaction((db) => updateWorker(db, w.id, { state: 'destroying' }, this.o.now()));
      if (factory) await factory.destroy(w.id, w.handle);
      await this.o.store.transaction(async (db) => {
        await updateWorker(db, w.id, { state: 'destroyed' }, this.o.now());
        const job = this.jobs.get(w.jobId);
        if (!job || this.finishedJobs.has(w.jobId)) await updateJob(db, w.jobId, { cleaned_up: 1 });
      });
      this.workers.delete(w.id);
      this.inUse.set(w.factory, Math.max(0, (this.inUse.get(w.factory) ?? 1) - 1));
      if (this.finishedJobs.has(w.jobId)) this.forget(w.jobId);
      this.wake();
    } catch (e) {
      // Retried with backoff by resync; the worker stays visible as destroying until then.
      w.destroying = false;
      w.destroyAttempts++;
      w.nextDestroyAt = this.o.now() + Math.min(60_000, 1000 * 2 ** w.destroyAttempts);
      this.o.onError?.(e, `destroy worker ${w.id}`);
    }
  }

  private async markCleanedUp(jobId: number): Promise<void> {
    await this.o.store.transaction((db) => updateJob(db, jobId, { cleaned_up: 1 }));
  }

  // ---------------------------------------------------------------- factory listener

  handleChanged(workerId: number, handle: WorkerHandle): void {
    const w = this.workers.get(workerId);
    if (!w) return;
    w.handle = handle;
    void this.o.store
      .transaction((db) => updateWorker(db, workerId, { handle: JSON.stringify(handle) }, this.o.now()))
      .catch((e: unknown) => this.o.onError?.(e, `record worker ${workerId}`));
  }

  workerLost(workerId: number, message: string): void {
    const w = this.workers.get(workerId);
    const job = w && this.jobs.get(w.jobId);
    if (!job || this.finishedJobs.has(job.id) || job.workerId !== workerId) return;
    void this.endRun(job, {
      outcome: 'start-failed',
      exitCode: null,
      signal: null,
      message: `worker lost: ${message}`,
    }).catch((e: unknown) => this.o.onError?.(e, `job ${job.id}`));
  }

  // ---------------------------------------------------------------- resync

  private resync(): void {
    const now = this.o.now();
    const graceMs = this.o.graceSeconds * 1000;
    const heartbeatMs = this.o.heartbeatSeconds * 1000;
    for (const job of this.jobs.values()) {
      if (this.finishedJobs.has(job.id) || job.workerId === null) continue;
      if (job.stopping && now - job.stopRequestedAt > graceMs + heartbeatMs) {
        this.workerLost(
          job.workerId,
          `did not stop within ${this.o.graceSeconds + this.o.heartbeatSeconds}s`,
        );
      } else if (job.state === 'running' && now - job.lastHeartbeat > heartbeatMs) {
        this.workerLost(job.workerId, `no heartbeat for ${Math.round((now - job.lastHeartbeat) / 1000)}s`);
      } else if (
        job.state === 'running' &&
        job.timeoutSeconds !== null &&
        job.startedAt !== null &&
        now - job.startedAt > job.timeoutSeconds * 1000 + graceMs + heartbeatMs
      ) {
        this.requestStop(job, 'cancel', `timed out after ${job.timeoutSeconds}s`);
      }
    }
    for (const w of this.workers.values()) {
      if (!w.destroying && w.destroyAttempts > 0 && now >= w.nextDestroyAt) void this.destroyWorker(w);
    }
    this.wake();
  }

  // ---------------------------------------------------------------- read side

  /** The live reason and position of an unfinished job, from the in-memory model. */
  explain(id: number): { reason: string; position: number | null } | undefined {
    const job = this.jobs.get(id);
    if (!job || this.finishedJobs.has(id)) return undefined;
    if (job.state === 'queued') {
      if (job.waitingFor.length > 0) {
        return {
          reason: `waiting for job${job.waitingFor.length > 1 ? 's' : ''} ${job.waitingFor.join(', ')} to succeed`,
          position: null,
        };
      }
      const e: Explanation | undefined = this.o.scheduler.explain(id);
      return e ? { reason: e.reason, position: e.position } : undefined;
    }
    if (job.state === 'admitted' && job.workerId === null) {
      const factoryName = this.o.targets[job.target]?.factory ?? '?';
      const factory = this.o.factories.get(factoryName);
      const waitlist = this.waitlistFor(job);
      const pos = waitlist?.position(id) ?? 0;
      return {
        reason: `waiting for a worker from factory ${factoryName}: ${this.inUse.get(factoryName) ?? 0}/${factory?.capacity ?? 0} in use; position ${pos}`,
        position: null,
      };
    }
    if (job.stopping) return { reason: `stopping: ${job.stopReason}`, position: null };
    return undefined;
  }

  /** Whether the job is known and has not finished. */
  isActive(id: number): boolean {
    return this.jobs.has(id) && !this.finishedJobs.has(id);
  }

  queueFigures(name: string): QueueFigures | undefined {
    return this.o.scheduler.queueFigures(name);
  }

  factoryFigures(): { name: string; kind: string; capacity: number; inUse: number; waiting: number }[] {
    return [...this.o.factories.values()].map((f) => ({
      name: f.name,
      kind: f.kind,
      capacity: f.capacity,
      inUse: this.inUse.get(f.name) ?? 0,
      waiting: this.waitlists.get(f.name)?.size ?? 0,
    }));
  }

  /** Resolves when the loop has nothing left to do right now (for tests and shutdown). */
  idle(): Promise<void> {
    if (!this.ticking && !this.wakeScheduled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private async event(db: Db, job: Tracked, type: string, message: string, data?: unknown): Promise<void> {
    await appendEvent(
      db,
      {
        subjectKind: 'job',
        subject: String(job.id),
        project: job.project,
        jobId: job.id,
        type,
        message,
        data,
      },
      this.o.now(),
    );
  }
}

/** A job's requests as integer amounts, with the implicit `jobs: 1`. */
export function jobAmounts(spec: JobSpec): Amounts {
  return { ...parseAmounts(spec.requests, 'requests'), [JOBS_RESOURCE]: 1 };
}
