/**
 * The controller: a level-triggered reconcile loop that drives every job through
 * queued → admitted → running → succeeded | failed | cancelled, and destroys what each job held.
 *
 * This file only wires its parts together and serves the port (port.ts) the services and the
 * API use:
 *
 *   tracked-jobs  the in-memory model of unfinished jobs     loop          scheduler passes
 *   journal       every transition with its event, one unit   provisioning  resources, then a worker
 *   holdings      workers and instances, one destroy path     lifecycle     cancel, evict, end, finish
 *   agent-desk    the agent protocol                          restore       the rebuild on start
 *   read-model    reasons, positions and figures              resync        what no event reports
 *   pilots        workers kept for the next job (reuse: true)
 *   background    work nobody awaits, which a stop waits for
 */
import type { CachedImageView } from '../domain/image.js';
import type { ForecastInput } from '../scheduler/forecast.js';
import { recentRuns } from '../store/queries/usage.js';
import { RuntimeHistory } from '../domain/runtime-history.js';
import { RecentArrivals } from '../scheduler/recent-arrivals.js';
import type { FinishRequest, HeartbeatResponse, Member, StartResponse } from '../agent/protocol.js';
import type { ClusterQueue } from '../domain/cluster-queue.js';
import { BadRequestError, ConflictError } from '../domain/errors.js';
import type { JobRecord } from '../domain/job.js';
import type { ProjectAccess } from '../domain/project.js';
import type { PoolFigures } from '../domain/pool-figures.js';
import type { Metadata } from '../domain/resource-instance.js';
import type {
  ChannelSocket,
  ExecRun,
  ExecSession,
  Factory,
  FactoryListener,
  WorkerHandle,
} from '../factories/factory.js';
import type { QueueFigures, QueueModel } from '../scheduler/types.js';
import { updateWorker } from '../store/queries/workers.js';
import { AgentDesk } from './agent-desk.js';
import { ArrayThrottles } from './array-throttles.js';
import type { ControllerCore, ControllerOptions } from './core.js';
import { Holdings } from './holdings.js';
import { Journal } from './journal.js';
import { Lifecycle } from './lifecycle.js';
import { ReconcileLoop } from './loop.js';
import { Pilots } from './pilots.js';
import { Pool, Pools } from './pool.js';
import { ProjectGates } from './project-gates.js';
import type { ControllerPort, LiveQueueFigures, LiveStatus, PilotNext } from './port.js';
import { Provisioning } from './provisioning.js';
import { QueueModels } from './queue-models.js';
import { ReadModel } from './read-model.js';
import { ModelFiguresReader } from './model-figures.js';
import { StartEstimates } from './start-estimates.js';
import { Restore } from './restore.js';
import { resync } from './resync.js';
import { StopSignals } from './stop-signals.js';
import { TrackedJobs } from './tracked-jobs.js';
import type { TrackedJob } from './model.js';
import { BackgroundWork } from './background.js';

export type { ControllerOptions } from './core.js';

/** Past runs read back on start into the runtime history (a few hundred KiB at most). */
const RUNS_REMEMBERED = 5_000;

/**
 * How long a stop waits for work under way before it closes factories and wells: longer than a
 * Slurm submission (about 0.5 s) or a quick well, short beside a replica's lease (leadership).
 */
const STOP_WAIT_MS = 3000;

export class Controller implements ControllerPort, FactoryListener {
  private readonly core: ControllerCore;
  private readonly queues: QueueModels;
  private readonly holdings: Holdings;
  private readonly lifecycle: Lifecycle;
  private readonly provisioning: Provisioning;
  private readonly loop: ReconcileLoop;
  private readonly desk: AgentDesk;
  private readonly read: ReadModel;
  private readonly estimates: StartEstimates;
  private readonly gates: ProjectGates;
  private readonly pilots: Pilots;
  private readonly figures: ModelFiguresReader;
  private resyncTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: ControllerOptions) {
    const pools = new Pools<TrackedJob>();
    const report = (err: unknown, what: string) => o.onError?.(err, what);
    for (const f of o.factories.values())
      pools.add(new Pool('factory', f.name, f.capacity, f.devices), f.kind);
    for (const w of o.wells.values()) pools.add(new Pool('resource', w.type, w.capacity), w.kind);
    this.core = {
      o,
      jobs: new TrackedJobs(o.now),
      journal: new Journal(o),
      pools,
      signals: new StopSignals(),
      throttles: new ArrayThrottles(),
      runtimes: new RuntimeHistory(),
      arrivals: new RecentArrivals(),
      wake: () => this.loop.wake(),
      report,
      background: new BackgroundWork(report),
    };
    this.queues = new QueueModels(o.scheduler);
    this.holdings = new Holdings(this.core);
    // A head that waits for units holds a reservation planned from who holds them (pool.ts).
    for (const pool of pools.all())
      pool.plan = {
        now: o.now,
        graceMs: o.graceSeconds * 1000,
        ends: () => this.holdings.ends(pool.kind === 'factory' ? 'worker' : 'instance', pool.name),
      };
    this.pilots = new Pilots(this.core, this.holdings);
    this.provisioning = new Provisioning(this.core, this.holdings, this.pilots, () => this.lifecycle);
    this.gates = new ProjectGates(this.core);
    this.lifecycle = new Lifecycle(this.core, this.holdings, this.provisioning, this.gates);
    this.loop = new ReconcileLoop(this.core, this.lifecycle, this.provisioning);
    this.desk = new AgentDesk(this.core, this.holdings, this.lifecycle, this.pilots);
    this.estimates = new StartEstimates(this.core, this.queues);
    this.read = new ReadModel(this.core, this.queues, this.estimates);
    this.figures = new ModelFiguresReader(this.core, this.queues, this.holdings, this.pilots);
  }

  /** The factories this controller drives, by name. */
  get factories(): ReadonlyMap<string, Factory> {
    return this.o.factories;
  }

  /** Rebuilds the model from the store, reconciles leftover workers, and starts the loop. */
  async start(): Promise<void> {
    const restore = new Restore(
      this.core,
      this.queues,
      this.holdings,
      this.lifecycle,
      this.provisioning,
      this.gates,
      this.pilots,
    );
    // What jobs took before the restart, for start-time estimates.
    for (const run of await recentRuns(this.o.store.db, RUNS_REMEMBERED))
      this.core.runtimes.record(run, run.ms);
    const leftovers = await restore.run();
    this.core.journal.started();
    this.desk.open();
    for (const h of leftovers) void this.holdings.destroy(h);
    this.resyncTimer = setInterval(
      () => resync(this.core, this.lifecycle, this.holdings, this.pilots),
      this.o.resyncMs ?? 1000,
    );
    this.resyncTimer.unref();
    this.loop.wake();
  }

  /**
   * Stops acting: no pass, no resync; factories and wells closed (a local worker's job ends).
   * Work under way (background.ts) first finishes and records itself, for a few seconds at most,
   * while its factory or well is still open: a creation cut off by the close would be recorded
   * as the job's failed start. What the close itself ends gets a moment to record that too.
   */
  async stop(): Promise<void> {
    this.loop.stop();
    clearInterval(this.resyncTimer);
    this.desk.close();
    await this.core.background.settled(STOP_WAIT_MS);
    await Promise.all([...this.o.factories.values(), ...this.o.wells.values()].map((p) => p.close()));
    await this.core.background.settled(STOP_WAIT_MS / 3);
  }

  // ---- changes committed by the services

  async jobSubmitted(record: JobRecord): Promise<void> {
    // A leader hears of its own replica's submissions twice (the notice, then its control message
    // back from the bus): the first one counts.
    if (this.core.jobs.get(record.id)) return;
    this.o.metrics?.jobSubmitted();
    await this.lifecycle.enqueueWhenReady(this.core.jobs.track(record));
    this.loop.wake();
  }

  cancel(id: number, by: string): Promise<void> {
    return this.lifecycle.cancel(id, by);
  }

  queueChanged(name: string, queue: ClusterQueue | undefined): void {
    this.queues.changed(name, queue);
    this.loop.wake();
  }

  setProjectWeight(project: string, weight: number): void {
    this.o.scheduler.setProjectWeight(project, weight);
    this.loop.wake();
  }

  projectsChanged(projects: ProjectAccess[]): Promise<void> {
    return this.gates.sync(projects);
  }

  projectDeleted(project: string, archivedAs: string, jobIds: number[]): void {
    this.gates.archive(project, archivedAs, jobIds);
  }

  queuedJobs(project: string): number {
    return this.core.jobs.queued(project);
  }

  // ---- the agent protocol

  agentStart(jobId: number, member?: Member, waitMs?: number): Promise<StartResponse | null> {
    return this.desk.agentStart(jobId, member, waitMs);
  }

  agentLogs(jobId: number, data: Buffer): Promise<void> {
    return this.desk.agentLogs(jobId, data);
  }

  agentHeartbeat(jobId: number, waitMs: number, rank?: number): Promise<HeartbeatResponse> {
    return this.desk.agentHeartbeat(jobId, waitMs, rank);
  }

  agentSpec(jobId: number): StartResponse {
    return this.desk.agentSpec(jobId);
  }

  agentFinish(jobId: number, result: FinishRequest, rank?: number): Promise<number | null> {
    return this.desk.agentFinish(jobId, result, rank);
  }

  agentWaiting(jobId: number, reason: string | null): void {
    this.desk.agentWaiting(jobId, reason);
  }

  artifactAttempt(jobId: number): number {
    return this.desk.artifactAttempt(jobId);
  }

  pilotNext(workerId: number, waitMs: number): Promise<PilotNext> {
    return this.desk.pilotNext(workerId, waitMs);
  }

  // ---- what factories report

  handleChanged(workerId: number, handle: WorkerHandle): void {
    const w = this.holdings.get('worker', workerId);
    if (!w) return;
    w.handle = handle;
    this.core.background.run(
      this.core.journal.write(({ db }) => updateWorker(db, workerId, { handle }, this.o.now())),
      `record worker ${workerId}`,
    );
  }

  workerLost(workerId: number, message: string): void {
    if (this.pilots.lost(workerId, message)) return;
    this.lifecycle.workerLost(workerId, message);
  }

  workerWaiting(workerId: number, reason: string | null): void {
    const w = this.holdings.get('worker', workerId);
    const job = w && this.core.jobs.unfinished(w.jobId);
    if (job?.workerId === workerId) job.workerWait = reason;
  }

  // ---- the read side

  explain(id: number, withEstimate = true): LiveStatus | undefined {
    return this.read.explain(id, withEstimate);
  }

  isActive(id: number): boolean {
    return this.core.jobs.unfinished(id) !== undefined;
  }

  queueModels(): Iterable<QueueModel> {
    return this.queues.all();
  }

  queueFigures(name: string): LiveQueueFigures | undefined {
    return this.read.queueFigures(name);
  }

  queueFiguresAll(): Iterable<QueueFigures & { name: string }> {
    return this.read.queueFiguresAll();
  }

  forecastInput(): ForecastInput {
    return this.estimates.forecastInput();
  }

  images(): CachedImageView[] {
    return this.o.machineImages?.list() ?? [];
  }

  async pruneImages(): Promise<CachedImageView[]> {
    return (await this.o.machineImages?.prune()) ?? [];
  }

  pendingIds(queue: string, offset: number, limit: number): number[] {
    return this.o.scheduler.pendingIds(queue, offset, limit);
  }

  factoryFigures(): PoolFigures[] {
    return this.core.pools.figures('factory');
  }

  resourceFigures(): PoolFigures[] {
    return this.core.pools.figures('resource');
  }

  modelFigures(): ModelFiguresReader {
    return this.figures;
  }

  heldMetadata(id: number): Record<string, Metadata> {
    return this.holdings.metadataOf(this.core.jobs.get(id));
  }

  execInJob(jobId: number, rank: number, run: ExecRun): ExecSession {
    const { factory, workerId } = this.execWhere(jobId, rank);
    return factory.exec
      ? factory.exec(jobId, workerId, rank, run)
      : factory.channels!.exec(jobId, workerId, rank, run);
  }

  agentChannel(workerId: number, rank: number, socket?: ChannelSocket): void {
    const worker = this.holdings.get('worker', workerId);
    const channels = worker && this.o.factories.get(worker.provider)?.channels;
    if (!channels)
      throw new ConflictError(
        `worker ${workerId} is not a live worker of a factory whose agents dial the server (it has gone, or this server does not lead)`,
      );
    if (socket) channels.connect(workerId, rank, socket);
  }

  checkExec(jobId: number, rank: number): void {
    this.execWhere(jobId, rank);
  }

  /** The factory and worker an exec in member `rank` of job `jobId` goes to, or why none. */
  private execWhere(jobId: number, rank: number): { factory: Factory; workerId: number } {
    const job = this.core.jobs.unfinished(jobId);
    if (!job || job.state !== 'running' || job.workerId === null)
      throw new ConflictError(`job ${jobId} is not running: there is nothing to run a command in`);
    if (!Number.isSafeInteger(rank) || rank < 0 || rank >= job.workers)
      throw new BadRequestError(
        `rank ${rank}: job ${jobId} has ${job.workers === 1 ? 'one member, rank 0' : `ranks 0 to ${job.workers - 1}`}`,
      );
    const worker = this.holdings.get('worker', job.workerId);
    const factory = worker && this.o.factories.get(worker.provider);
    if (!factory?.exec && !factory?.channels)
      throw new ConflictError(
        `job ${jobId} runs on factory "${worker?.provider ?? '?'}" (${factory?.kind ?? 'gone'}), which cannot run a command inside its jobs: berth exec reaches jobs of local factories and of berth agents (a slurm factory without sharedDir)`,
      );
    const unreachable = factory.exec ? undefined : factory.channels!.refusal(job.workerId, rank);
    if (unreachable) throw new ConflictError(`job ${jobId}: ${unreachable}`);
    return { factory, workerId: job.workerId };
  }
}
