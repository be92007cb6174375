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
 * Acquisition order (no deadlock): quota first (admission by the scheduler), then each managed
 * resource in lexicographic order of type, then a worker. A job keeps what it has while it waits
 * for the next thing, and waits only for things ordered after everything it holds. A cycle of
 * waiting jobs would need some job to wait for a thing ordered before one it holds, which never
 * happens: so no deadlock can form. (The buildomat case: with capacity 1 for resource R and for
 * the factory, a job holding the worker already holds R; nobody holds the worker while waiting
 * for R.)
 */
import type { FinishRequest, StartResponse } from '../agent/protocol.js';
import { ConflictError, UnauthorizedError } from '../domain/errors.js';
import { isTerminal, type ActiveJob, type JobSpec, type JobState } from '../domain/job.js';
import { formatAmounts, parseAmounts, type Amounts } from '../domain/quantity.js';
import { JOBS_RESOURCE } from '../domain/cluster-queue.js';
import type { Factory, FactoryListener, WorkerHandle } from '../factories/factory.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import { WellError, type Metadata, type Well } from '../wells/well.js';
import type { Decision, Explanation, QueueFigures, QueueModel, SchedulerApi } from '../scheduler/types.js';
import type { TargetConfig } from '../server/config.js';
import { newToken, hashToken } from '../service/tokens.js';
import { listClusterQueues } from '../store/queries/cluster-queues.js';
import { appendEvent } from '../store/queries/events.js';
import { findJobRow, loadActiveJobRows, updateJob, type JobUpdate } from '../store/queries/jobs.js';
import { deleteJobTokens, insertToken } from '../store/queries/tokens.js';
import { insertWorker, loadLiveWorkerRows, updateWorker } from '../store/queries/workers.js';
import {
  insertInstance,
  loadLiveInstanceRows,
  parseMetadata,
  updateInstance,
} from '../store/queries/resource-instances.js';
import type { JobRow } from '../store/schema.js';
import { GroupCommit } from '../store/group-commit.js';
import type { Db, Store } from '../store/store.js';
import type { PoolFigures } from '../domain/pool-figures.js';
import type { LogStore } from './log-store.js';
import { toQueueModel } from './queue-model.js';
import { holdingKey, newHolding, type Holding } from './holding.js';
import { Pool, poolKey } from './pool.js';

export interface ControllerOptions {
  store: Store;
  scheduler: SchedulerApi;
  factories: Map<string, Factory>;
  wells: Map<string, Well>;
  targets: Record<string, TargetConfig>;
  logs: LogStore;
  /** Where agents reach the server (known once it listens). */
  serverUrl: () => string;
  now: () => number;
  graceSeconds: number;
  heartbeatSeconds: number;
  resyncMs?: number;
  onError?: (err: unknown, what: string) => void;
  /**
   * Shares transactions with other writers (the submissions'). Every transition is one unit with
   * its event, committed or rolled back alone; units written at the same time share a commit.
   */
  groupCommit?: GroupCommit;
  /** Where timings and counts go (GET /metrics); none in tests that do not look. */
  metrics?: ControllerMetrics;
  /** A job changed (a transition, a cancel request, its cleanup): for the live stream. */
  onJobChanged?: (id: number, project: string, state: JobState, reason: string) => void;
}

type StopKind = 'cancel' | 'preempt' | 'drain';

interface Tracked extends ActiveJob {
  name: string;
  /** What its agent runs (served by agentStart without a store read). */
  command: string[];
  env: Record<string, string>;
  /** Times the job was evicted and requeued. */
  attempts: number;
  workerId: number | null;
  lastHeartbeat: number;
  stopping: StopKind | null;
  stopReason: string;
  stopRequestedAt: number;
  /** Set while the job waits for its dependencies. */
  waitingFor: number[];
  /** Resource types it needs, in acquisition (lexicographic) order. */
  resources: string[];
  /** How many of `resources` it holds. */
  acquired: number;
  /** Keys of the workers and instances it holds (see holding.ts). */
  holdings: Set<string>;
  /** The pool it waits in, if any. */
  waitingIn: Pool<Tracked> | null;
  /** Failed attempts to create its current resource. */
  createFailures: number;
  /** Whether an agent token may exist for it (none is made for in-process workers). */
  mayHoldToken: boolean;
}

/** Attempts to create one resource instance before the job fails with the well's reason. */
const MAX_CREATE_ATTEMPTS = 3;

export class Controller implements FactoryListener {
  private readonly jobs = new Map<number, Tracked>();
  private readonly holdings = new Map<string, Holding>();
  private readonly pools = new Map<string, Pool<Tracked>>();
  private readonly stopWaiters = new Map<number, Set<() => void>>();
  private readonly dependents = new Map<number, Set<number>>();
  private readonly finishedJobs = new Set<number>();
  /** Unfinished jobs with a worker: what resync watches (heartbeats, stops, timeouts). */
  private readonly withWorker = new Set<Tracked>();
  /** Jobs in state running, per cluster queue (the scheduler counts admitted and running as one). */
  private readonly runningIn = new Map<string, number>();
  /** Holdings whose destruction failed, retried with backoff by resync. */
  private readonly destroyRetries = new Set<Holding>();
  /** Jobs handed to the scheduler and not yet admitted or withdrawn: a pass has work if any. */
  private pendingInScheduler = 0;
  private readonly commits: GroupCommit;
  /** The queues as the scheduler knows them, for submission checks without a store read. */
  private readonly queues = new Map<string, QueueModel>();
  private wakeScheduled = false;
  private ticking = false;
  private tickAgain = false;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /**
   * While the model is rebuilt on start, nothing else may run in between: a pass would see the
   * quota of admitted jobs not yet restored as free. So writes go straight to the store (its
   * driver never yields to the event loop) rather than through the group commit, and passes wait.
   */
  private starting = true;

  constructor(private readonly o: ControllerOptions) {
    this.commits = o.groupCommit ?? new GroupCommit(o.store);
    for (const f of o.factories.values()) this.addPool(new Pool('factory', f.name, f.capacity));
    for (const w of o.wells.values()) this.addPool(new Pool('resource', w.type, w.capacity));
  }

  private addPool(p: Pool<Tracked>): void {
    this.pools.set(p.key, p);
  }

  // ---------------------------------------------------------------- life cycle

  /** Rebuilds the model from the store, reconciles leftover workers, and starts the loop. */
  async start(): Promise<void> {
    const db = this.o.store.db;
    for (const q of await listClusterQueues(db)) this.upsertQueue(toQueueModel(q));

    // Every worker and instance not confirmed destroyed belongs to a previous run. Its agent died
    // with that server, so destroy them all: an instance whose creation was never confirmed is
    // destroyed by its id (its well may have made it). Jobs that had started cannot be resumed
    // (and must not run twice): they fail. Jobs that had not started keep their quota and
    // acquire their resources and worker again.
    const leftovers: Holding[] = [];
    for (const w of await loadLiveWorkerRows(db)) {
      const h = newHolding('worker', Number(w.id), Number(w.job_id), w.factory);
      h.handle = w.handle ? (JSON.parse(w.handle) as WorkerHandle) : null;
      leftovers.push(h);
    }
    for (const r of await loadLiveInstanceRows(db)) {
      const h = newHolding('instance', Number(r.id), Number(r.job_id), r.type);
      h.metadata = r.state === 'creating' ? null : parseMetadata(r);
      leftovers.push(h);
    }
    for (const h of leftovers) {
      this.holdings.set(holdingKey(h.kind, h.id), h);
      const pool = this.poolOf(h);
      if (pool) pool.inUse++;
    }
    const heldBy = new Map<number, string[]>();
    for (const h of leftovers)
      heldBy.set(h.jobId, [...(heldBy.get(h.jobId) ?? []), holdingKey(h.kind, h.id)]);
    for (const row of await loadActiveJobRows(db)) await this.restore(row, heldBy.get(Number(row.id)) ?? []);
    this.starting = false;
    for (const h of leftovers) void this.destroyHolding(h);
    this.resyncTimer = setInterval(() => this.resync(), this.o.resyncMs ?? 1000);
    this.resyncTimer.unref();
    this.wake();
  }

  /** Rebuilds one job; `held` are the leftovers of the previous run it held (being destroyed). */
  private async restore(row: JobRow, held: string[]): Promise<void> {
    const id = Number(row.id);
    const state = row.state as JobState;
    if (isTerminal(state) && held.length === 0) {
      await this.markCleanedUp(id);
      return;
    }
    // Attached before anything else, so the job counts as cleaned up only once they are gone.
    const job = this.track(row);
    for (const key of held) job.holdings.add(key);
    if (isTerminal(state)) {
      this.finishedJobs.add(id);
      return;
    }
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
      this.advance(job);
      return;
    }
    await this.enqueueWhenReady(job);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.o.logs.close();
    clearInterval(this.resyncTimer);
    for (const waiters of this.stopWaiters.values()) for (const w of waiters) w();
    await Promise.all([...this.o.factories.values(), ...this.o.wells.values()].map((p) => p.close()));
  }

  private track(row: JobRow): Tracked {
    const spec = JSON.parse(row.spec) as JobSpec;
    const job: Tracked = {
      id: Number(row.id),
      name: row.name,
      command: spec.command,
      env: spec.env,
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
      resources: [...spec.resources].sort(),
      acquired: 0,
      holdings: new Set(),
      waitingIn: null,
      createFailures: 0,
      // A queued job never holds one: requeue and finish delete it with the state change.
      mayHoldToken: row.state !== 'queued',
    };
    this.jobs.set(job.id, job);
    if (job.state === 'running') this.countRunning(job.queue, 1);
    return job;
  }

  // ---------------------------------------------------------------- inputs from the API

  /** A job was committed to the store as queued. */
  async jobSubmitted(row: JobRow): Promise<void> {
    this.o.metrics?.jobSubmitted();
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
    this.pendingInScheduler++;
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
    await this.write(async (db) => {
      await updateJob(db, id, { cancel_requested: 1 });
      await this.event(db, job, 'cancel-requested', reason);
    });
    job.cancelRequested = true;
    if (job.state === 'queued') {
      if (this.o.scheduler.withdraw(id)) this.pendingInScheduler--;
      await this.finishJob(job, 'cancelled', reason, null);
    } else if (job.workerId === null) {
      this.leaveWaitlist(job);
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
    if (this.wakeScheduled || this.stopped || this.starting) return;
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
      // Whatever asked for another pass while this one waited for its writes gets it at once,
      // before the event loop turns: e.g. the pass after a preemption victim is requeued admits
      // its preemptor before anyone can see the victim waiting behind it.
      do {
        this.tickAgain = false;
        await this.reconcile();
      } while (this.tickAgain && !this.stopped);
    } finally {
      this.ticking = false;
    }
  }

  /** One pass: scheduler decisions, carried out and recorded; then pools hand out what is free. */
  private async reconcile(): Promise<void> {
    const t0 = performance.now();
    try {
      const hadWork = this.pendingInScheduler > 0;
      const decisions = this.o.scheduler.schedule(this.o.now());
      if (hadWork) this.o.metrics?.schedulerPass((performance.now() - t0) / 1000);
      if (decisions.length > 0) await this.apply(decisions);
      this.dispatch();
    } catch (e) {
      this.o.onError?.(e, 'reconcile');
    } finally {
      this.o.metrics?.tick((performance.now() - t0) / 1000);
    }
  }

  private async apply(decisions: Decision[]): Promise<void> {
    const now = this.o.now();
    const admits: { job: Tracked; d: Extract<Decision, { kind: 'admit' }> }[] = [];
    for (const d of decisions) {
      this.o.metrics?.decision(d.kind);
      if (d.kind !== 'admit') continue;
      this.pendingInScheduler--;
      const job = this.jobs.get(d.id);
      if (job) admits.push({ job, d });
    }
    // The admissions of one pass are one unit: one commit however many there are.
    if (admits.length > 0)
      await this.write(async (db) => {
        for (const { job, d } of admits) {
          const borrowed = Object.keys(d.borrowed).length > 0 ? formatAmounts(d.borrowed) : null;
          await updateJob(db, job.id, {
            state: 'admitted',
            admitted_at: now,
            borrowed: borrowed && JSON.stringify(borrowed),
            reason: 'admitted',
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
        }
      });
    for (const { job, d } of admits) {
      this.setState(job, 'admitted');
      job.admittedAt = now;
      job.borrowed = d.borrowed;
      this.advance(job);
    }
    // Evictions at once, so that their records share commits.
    const evictions: Promise<void>[] = [];
    for (const d of decisions) {
      if (d.kind === 'preempt') {
        for (const victimId of d.victims) {
          const victim = this.jobs.get(victimId);
          if (victim)
            evictions.push(this.preempt(victim, 'preempt', `preempted by job ${d.preemptor}: ${d.reason}`));
        }
      } else if (d.kind === 'drain') {
        const job = this.jobs.get(d.id);
        if (job) evictions.push(this.preempt(job, 'drain', d.reason));
      }
    }
    await Promise.all(evictions);
  }

  /** Evicts an admitted job so it returns to its queue. */
  private async preempt(job: Tracked, kind: 'preempt' | 'drain', reason: string): Promise<void> {
    if (job.workerId === null) {
      this.leaveWaitlist(job);
      await this.requeue(job, reason);
    } else {
      this.requestStop(job, kind, reason);
    }
  }

  private poolOf(h: Holding): Pool<Tracked> | undefined {
    return this.pools.get(poolKey(h.kind === 'worker' ? 'factory' : 'resource', h.provider));
  }

  /** Puts an admitted job in line for the next thing it needs, in the global order. */
  private advance(job: Tracked): void {
    const next =
      job.acquired < job.resources.length
        ? poolKey('resource', job.resources[job.acquired]!)
        : poolKey('factory', this.o.targets[job.target]?.factory ?? '');
    const pool = this.pools.get(next);
    if (!pool) return; // checked at submission; a config change may still remove it
    job.waitingIn = pool;
    pool.waitlist.add(job);
  }

  private leaveWaitlist(job: Tracked): void {
    job.waitingIn?.waitlist.remove(job.id);
    job.waitingIn = null;
  }

  /** Hands out resource instances and workers wherever a pool has room. */
  private dispatch(): void {
    for (const pool of this.pools.values()) {
      for (let job = pool.take(); job; job = pool.take()) {
        job.waitingIn = null;
        const acquired = job;
        const work =
          pool.kind === 'resource'
            ? this.createInstance(this.o.wells.get(pool.name)!, acquired)
            : this.createWorker(this.o.factories.get(pool.name)!, acquired);
        void work.catch((e: unknown) => this.o.onError?.(e, `${pool.key} for job ${acquired.id}`));
      }
    }
  }

  /**
   * Records a worker or instance the job is about to get (`creating`) and attaches it to the job.
   * While the record is being written the job holds a placeholder, so that a job cancelled or
   * evicted in the meantime does not count as cleaned up, nor is forgotten, before its new
   * holding exists: the caller then destroys it through the one destruction path.
   */
  private async recordHolding(
    job: Tracked,
    kind: Holding['kind'],
    provider: string,
    insert: (db: Db) => Promise<number>,
  ): Promise<Holding> {
    const placeholder = `acquiring:${kind}:${provider}`;
    job.holdings.add(placeholder);
    let id: number;
    try {
      id = await this.write(insert);
    } finally {
      job.holdings.delete(placeholder);
    }
    const h = newHolding(kind, id, job.id, provider);
    this.holdings.set(holdingKey(kind, id), h);
    job.holdings.add(holdingKey(kind, id));
    return h;
  }

  /** Whether the job still wants what it is being given (not cancelled, preempted or finished). */
  private stillWants(job: Tracked): boolean {
    return (
      this.jobs.get(job.id) === job &&
      !this.finishedJobs.has(job.id) &&
      job.state === 'admitted' &&
      !job.stopping
    );
  }

  private async createInstance(well: Well, job: Tracked): Promise<void> {
    const now = this.o.now();
    const h = await this.recordHolding(job, 'instance', well.type, async (db) => {
      const instanceId = await insertInstance(db, job.id, well.type, now);
      await updateJob(db, job.id, { reason: `acquiring resource ${well.type} (instance ${instanceId})` });
      await this.event(
        db,
        job,
        'resource-creating',
        `creating resource ${well.type} (instance ${instanceId})`,
      );
      return instanceId;
    });
    const id = h.id;
    if (!this.stillWants(job)) return this.destroyHolding(h); // cancelled or evicted meanwhile
    const req = { instanceId: id, jobId: job.id, project: job.project, type: well.type };
    try {
      h.metadata = await well.create(req);
    } catch (e) {
      await this.instanceFailed(job, h, e);
      return;
    }
    await this.write(async (db) => {
      await updateInstance(db, id, { state: 'ready', metadata: JSON.stringify(h.metadata) }, this.o.now());
      await this.event(db, job, 'resource-ready', `resource ${well.type} ready (instance ${id})`);
    });
    if (!this.stillWants(job)) {
      // Cancelled or evicted while the well worked: let go of it at once.
      if (!h.destroying) void this.destroyHolding(h);
      return;
    }
    job.acquired++;
    job.createFailures = 0;
    this.advance(job);
    this.wake();
  }

  /** A well could not create: retry a few times, then fail the job with the well's reason. */
  private async instanceFailed(job: Tracked, h: Holding, e: unknown): Promise<void> {
    const message = e instanceof Error ? e.message : String(e);
    const retryable = !(e instanceof WellError) || e.retryable;
    job.createFailures++;
    await this.write(async (db) => {
      await updateInstance(db, h.id, { state: 'failed', error: message }, this.o.now());
      await this.event(
        db,
        job,
        'resource-failed',
        `resource ${h.provider} (instance ${h.id}) failed: ${message}`,
      );
    });
    // The well may have made part of it: destroy by id, like after a crash.
    void this.destroyHolding(h);
    if (!this.stillWants(job)) return;
    if (retryable && job.createFailures < MAX_CREATE_ATTEMPTS) {
      const retry = setTimeout(
        () => {
          if (this.stillWants(job)) {
            this.advance(job);
            this.wake();
          }
        },
        500 * 2 ** job.createFailures,
      );
      retry.unref();
      return;
    }
    this.o.scheduler.release(job.id);
    await this.finishJob(job, 'failed', `cannot create resource ${h.provider}: ${message}`, null);
  }

  private async createWorker(factory: Factory, job: Tracked): Promise<void> {
    const now = this.o.now();
    // An in-process agent calls the controller directly: no token to make, none to leak.
    const token = factory.inProcess ? null : newToken('job');
    if (token) job.mayHoldToken = true;
    const record = await this.recordHolding(job, 'worker', factory.name, async (db) => {
      const id = await insertWorker(db, { jobId: job.id, factory: factory.name, target: job.target }, now);
      if (token) {
        const record = {
          hash: hashToken(token),
          userId: null,
          jobId: job.id,
          label: `job ${job.id}`,
          expiresAt: null,
        };
        await insertToken(db, record, now);
      }
      await updateJob(db, job.id, { reason: `starting on worker ${id} (factory ${factory.name})` });
      await this.event(db, job, 'worker-creating', `worker ${id} requested from factory ${factory.name}`);
      return id;
    });
    const workerId = record.id;
    if (!this.stillWants(job)) {
      // Cancelled or evicted meanwhile: its token (maybe written after the end revoked tokens)
      // must not outlive the job.
      if (token) await this.write((db) => deleteJobTokens(db, job.id));
      return this.destroyHolding(record);
    }
    job.workerId = workerId;
    job.lastHeartbeat = this.o.now();
    this.withWorker.add(job);
    try {
      record.handle = await factory.create({
        workerId,
        jobId: job.id,
        target: job.target,
        url: this.o.serverUrl(),
        token,
      });
      await this.write(async (db) => {
        await updateWorker(
          db,
          workerId,
          { state: 'ready', handle: JSON.stringify(record.handle) },
          this.o.now(),
        );
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      await this.write((db) => updateWorker(db, workerId, { state: 'failed', error: message }, this.o.now()));
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
    if (job.state !== 'running') {
      const now = this.o.now();
      await this.write(async (db) => {
        await updateJob(db, jobId, {
          state: 'running',
          started_at: now,
          reason: `running on worker ${job.workerId}`,
        });
        await this.event(db, job, 'started', `started on worker ${job.workerId}`);
      });
      this.setState(job, 'running');
      job.startedAt = now;
    }
    job.lastHeartbeat = this.o.now();
    return {
      jobId,
      project: job.project,
      command: job.command,
      env: job.env,
      resources: this.heldMetadata(job),
      timeoutSeconds: job.timeoutSeconds,
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
    if (!job.stopping && waitMs > 0 && !this.stopped) {
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
    // An evicted job goes back to its queue — unless it had already ended on its own before it
    // was stopped: then its real outcome stands (running it again would repeat finished work).
    if ((job.stopping === 'preempt' || job.stopping === 'drain') && r.outcome !== 'exited') {
      await this.requeue(job, job.stopReason);
      return;
    }
    if (job.stopping === 'preempt' || job.stopping === 'drain') job.stopping = null;
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

  /** Puts an evicted job back in its queue at its old place; what it held is destroyed. */
  private async requeue(job: Tracked, reason: string): Promise<void> {
    const revoke = job.mayHoldToken;
    await this.write(async (db) => {
      await updateJob(db, job.id, {
        state: 'queued',
        reason,
        admitted_at: null,
        started_at: null,
        borrowed: null,
        attempts: job.attempts + 1,
      });
      if (revoke) await deleteJobTokens(db, job.id);
      await this.event(db, job, 'requeued', reason);
    });
    job.mayHoldToken = false;
    this.withWorker.delete(job);
    this.setState(job, 'queued');
    job.attempts++;
    job.admittedAt = null;
    job.startedAt = null;
    job.borrowed = null;
    job.workerId = null;
    job.stopping = null;
    job.acquired = 0;
    job.createFailures = 0;
    this.pendingInScheduler++;
    this.o.scheduler.requeue(job.id);
    this.releaseAll(job);
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
    const holdsSomething = job.holdings.size > 0;
    const update: JobUpdate = { state, reason, exit_code: exitCode, finished_at: now };
    if (!holdsSomething) update.cleaned_up = 1;
    const revoke = job.mayHoldToken;
    await this.write(async (db) => {
      await updateJob(db, job.id, update);
      if (revoke) await deleteJobTokens(db, job.id);
      await this.event(db, job, state, reason, exitCode === null ? undefined : { exitCode });
    });
    job.mayHoldToken = false;
    this.setState(job, state);
    this.o.metrics?.jobFinished(state);
    this.withWorker.delete(job);
    this.finishedJobs.add(job.id);
    this.leaveWaitlist(job);
    this.o.logs.ended(job.id);
    if (holdsSomething) this.releaseAll(job);
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

  /** Every change of a tracked job's state goes through here, so the running counts stay true. */
  private setState(job: Tracked, state: JobState): void {
    if (job.state === 'running') this.countRunning(job.queue, -1);
    if (state === 'running') this.countRunning(job.queue, 1);
    job.state = state;
  }

  private countRunning(queue: string, delta: 1 | -1): void {
    const n = (this.runningIn.get(queue) ?? 0) + delta;
    if (n > 0) this.runningIn.set(queue, n);
    else this.runningIn.delete(queue);
  }

  private forget(jobId: number): void {
    const job = this.jobs.get(jobId);
    if (job?.state === 'running') this.countRunning(job.queue, -1);
    if (job) this.withWorker.delete(job);
    this.jobs.delete(jobId);
    this.finishedJobs.delete(jobId);
    this.stopWaiters.delete(jobId);
  }

  // ---------------------------------------------------------------- cleanup

  /** Destroys everything the job holds (its resources and its worker). */
  private releaseAll(job: Tracked): void {
    for (const key of job.holdings) {
      const h = this.holdings.get(key);
      if (h) void this.destroyHolding(h);
    }
  }

  /**
   * Destroys a worker or an instance: recorded as destroying, destroyed by its factory or well,
   * then confirmed. A failure is retried with backoff by resync; until then the record stays
   * visible as destroying and its capacity stays taken.
   */
  private async destroyHolding(h: Holding): Promise<void> {
    if (h.destroying) return;
    h.destroying = true;
    const key = holdingKey(h.kind, h.id);
    const mark = (db: Db, state: 'destroying' | 'destroyed') =>
      h.kind === 'worker'
        ? updateWorker(db, h.id, { state }, this.o.now())
        : updateInstance(db, h.id, { state }, this.o.now());
    try {
      await this.write((db) => mark(db, 'destroying'));
      if (h.kind === 'worker') await this.o.factories.get(h.provider)?.destroy(h.id, h.handle);
      else {
        const req = {
          instanceId: h.id,
          jobId: h.jobId,
          project: this.jobs.get(h.jobId)?.project ?? '',
          type: h.provider,
        };
        await this.o.wells.get(h.provider)?.destroy(req, h.metadata);
      }
      const job = this.jobs.get(h.jobId);
      job?.holdings.delete(key);
      const cleaned = !job || (this.finishedJobs.has(h.jobId) && job.holdings.size === 0);
      await this.write(async (db) => {
        await mark(db, 'destroyed');
        if (cleaned) await updateJob(db, h.jobId, { cleaned_up: 1 });
      });
      this.holdings.delete(key);
      this.destroyRetries.delete(h);
      this.poolOf(h)?.free();
      if (cleaned && job) this.o.onJobChanged?.(job.id, job.project, job.state, 'cleaned up');
      if (cleaned && job) this.forget(h.jobId);
      this.wake();
    } catch (e) {
      h.destroying = false;
      h.destroyAttempts++;
      h.nextDestroyAt = this.o.now() + Math.min(60_000, 1000 * 2 ** h.destroyAttempts);
      this.destroyRetries.add(h);
      this.o.onError?.(e, `destroy ${key}`);
    }
  }

  private async markCleanedUp(jobId: number): Promise<void> {
    await this.write((db) => updateJob(db, jobId, { cleaned_up: 1 }));
  }

  // ---------------------------------------------------------------- factory listener

  handleChanged(workerId: number, handle: WorkerHandle): void {
    const w = this.holdings.get(holdingKey('worker', workerId));
    if (!w) return;
    w.handle = handle;
    void this.write((db) =>
      updateWorker(db, workerId, { handle: JSON.stringify(handle) }, this.o.now()),
    ).catch((e: unknown) => this.o.onError?.(e, `record worker ${workerId}`));
  }

  workerLost(workerId: number, message: string): void {
    const w = this.holdings.get(holdingKey('worker', workerId));
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
    for (const job of this.withWorker) {
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
    for (const h of this.destroyRetries) {
      if (!h.destroying && now >= h.nextDestroyAt) void this.destroyHolding(h);
    }
    this.wake();
  }

  // ---------------------------------------------------------------- read side

  /** The live reason and position of an unfinished job, from the in-memory model; while it is in
   * the scheduler's queue, also its place among its project's jobs and what blocks it. */
  explain(id: number):
    | {
        reason: string;
        position: number | null;
        projectPosition?: number;
        blockers?: Explanation['blockers'];
      }
    | undefined {
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
      return e
        ? { reason: e.reason, position: e.position, projectPosition: e.projectPosition, blockers: e.blockers }
        : undefined;
    }
    if (job.stopping) return { reason: `stopping: ${job.stopReason}`, position: null };
    if (job.state === 'admitted' && job.waitingIn)
      return { reason: job.waitingIn.describeWait(id), position: null };
    if (job.state === 'admitted' && job.workerId === null && job.acquired < job.resources.length) {
      return { reason: `acquiring resource ${job.resources[job.acquired]}`, position: null };
    }
    if (job.stopping) return { reason: `stopping: ${job.stopReason}`, position: null };
    return undefined;
  }

  /** Whether the job is known and has not finished. */
  isActive(id: number): boolean {
    return this.jobs.has(id) && !this.finishedJobs.has(id);
  }

  queueFigures(name: string): (QueueFigures & { running: number }) | undefined {
    const f = this.o.scheduler.queueFigures(name);
    return f && { ...f, running: this.runningIn.get(name) ?? 0 };
  }

  /** Every cluster queue's live figures (for the metrics gauges). */
  *queueFiguresAll(): Iterable<QueueFigures & { name: string }> {
    for (const name of this.queues.keys()) {
      const f = this.o.scheduler.queueFigures(name);
      if (f) yield { name, ...f };
    }
  }

  /** Pending job ids of a queue in admission order (a page of them). */
  pendingIds(queue: string, offset: number, limit: number): number[] {
    return this.o.scheduler.pendingIds(queue, offset, limit);
  }

  /** A project's fair-share weight changed (or is loaded on start). */
  setProjectWeight(project: string, weight: number): void {
    this.o.scheduler.setProjectWeight(project, weight);
    this.wake();
  }

  factoryFigures(): PoolFigures[] {
    return [...this.o.factories.values()].map((f) => this.figures(poolKey('factory', f.name), f.kind));
  }

  resourceFigures(): PoolFigures[] {
    return [...this.o.wells.values()].map((w) => this.figures(poolKey('resource', w.type), w.kind));
  }

  private figures(key: string, kind: string): PoolFigures {
    const p = this.pools.get(key)!;
    return { name: p.name, kind, capacity: p.capacity, inUse: p.inUse, waiting: p.waitlist.size };
  }

  /** The metadata of the resources a running job holds: for that job only (GET /job/self). */
  heldMetadata(job: Pick<Tracked, 'holdings'> | number): Record<string, Metadata> {
    const j = typeof job === 'number' ? this.jobs.get(job) : job;
    const out: Record<string, Metadata> = {};
    for (const key of j?.holdings ?? []) {
      const h = this.holdings.get(key);
      if (h?.kind === 'instance' && h.metadata && !h.destroying) out[h.provider] = h.metadata;
    }
    return out;
  }

  /** One unit of change (a transition with its event), committed with whatever else is written now. */
  private write<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return this.starting ? this.o.store.transaction(fn) : this.commits.run(fn);
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
    // Deferred past the commit: these transactions run to their end without yielding to the
    // event loop, and by then `job.state` holds the state the transaction recorded.
    if (this.o.onJobChanged)
      setImmediate(() => this.o.onJobChanged?.(job.id, job.project, job.state, message));
  }
}

/** A job's requests as integer amounts, with the implicit `jobs: 1`. */
export function jobAmounts(spec: JobSpec): Amounts {
  return { ...parseAmounts(spec.requests, 'requests'), [JOBS_RESOURCE]: 1 };
}
