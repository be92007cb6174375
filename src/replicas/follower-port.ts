/**
 * The controller port of a replica that does not lead. It has no scheduler and runs no job: the
 * changes the services commit reach the leader as control messages, sent in their own
 * transaction (service/live/notices.ts, outbox.ts), and here change only the queue models; the live figures are the leader's last
 * published copy; the queue models come from the store. What only the leader's in-memory model
 * knows — a pending job's position and blockers, a queue's admission order, the agent protocol —
 * is not here: the API hands those requests to the leader (api/forward.ts), and answers from the
 * store alone (a job's recorded reason) when no leader can be reached.
 */
import type { CachedImageView } from '../domain/image.js';
import type { FinishRequest, HeartbeatResponse, StartResponse } from '../agent/protocol.js';
import type {
  ControllerPort,
  LiveQueueFigures,
  LiveStatus,
  QueueFigures,
  QueueModel,
} from '../controller/port.js';
import type { ExecSession, PilotNext } from '../controller/port.js';
import { toQueueModel } from '../controller/queue-models.js';
import type { ClusterQueue } from '../domain/cluster-queue.js';
import { UnavailableError } from '../domain/errors.js';
import type { PoolFigures } from '../domain/pool-figures.js';
import type { Metadata } from '../domain/resource-instance.js';
import { findClusterQueue, listClusterQueues } from '../store/queries/cluster-queues.js';
import type { Db } from '../store/store.js';
import type { FiguresReader } from './live-figures.js';

export class FollowerPort implements ControllerPort {
  private readonly models = new Map<string, QueueModel>();

  constructor(
    private readonly db: Db,
    private readonly figures: FiguresReader,
    /** Where the leader is, for error messages. */
    private readonly leader: () => string | undefined,
    /** Whether this replica leads but has not finished rebuilding its scheduler. */
    private readonly rebuilding: () => boolean,
  ) {}

  /** Reads every queue definition (at start, and after the bus reconnected). */
  async loadQueues(): Promise<void> {
    const queues = await listClusterQueues(this.db);
    this.models.clear();
    for (const q of queues) this.models.set(q.name, toQueueModel(q));
  }

  /** Reads one queue's definition again (another replica changed it). */
  async reloadQueue(name: string): Promise<void> {
    const q = await findClusterQueue(this.db, name);
    if (q) this.models.set(name, toQueueModel(q));
    else this.models.delete(name);
  }

  // The leader hears of these from the change's own transaction (outbox.ts).
  async jobSubmitted(): Promise<void> {}
  async cancel(): Promise<void> {}
  setProjectWeight(): void {}
  async projectsChanged(): Promise<void> {}
  projectDeleted(): void {}

  /** A submission here is checked against the queues as they now are. */
  queueChanged(name: string, queue: ClusterQueue | undefined): void {
    if (queue) this.models.set(name, toQueueModel(queue));
    else this.models.delete(name);
  }

  /** No live overlay here: the job shows its recorded reason. */
  explain(): LiveStatus | undefined {
    return undefined;
  }

  /** Not known here: a job's end is read from the store (see PgLogStore.follow). */
  isActive(): boolean {
    return true;
  }

  /** The leader holds the model: the service reads the store's counts instead. */
  queuedJobs(): undefined {
    return undefined;
  }

  queueModels(): Iterable<QueueModel> {
    return this.models.values();
  }

  queueFigures(name: string): LiveQueueFigures | undefined {
    return this.figures.latest.queues[name];
  }

  *queueFiguresAll(): Iterable<QueueFigures & { name: string }> {
    for (const [name, f] of Object.entries(this.figures.latest.queues)) yield { name, ...f };
  }

  /** The leader holds the model. */
  forecastInput(): undefined {
    return undefined;
  }

  pendingIds(): number[] {
    throw this.leaderOnly('the admission order of a queue');
  }

  images(): CachedImageView[] {
    throw this.leaderOnly("the images on the leader's machine");
  }

  pruneImages(): Promise<CachedImageView[]> {
    return Promise.reject(this.leaderOnly("the images on the leader's machine"));
  }

  factoryFigures(): PoolFigures[] {
    return this.figures.latest.factories;
  }

  resourceFigures(): PoolFigures[] {
    return this.figures.latest.resources;
  }

  /** The leader holds the model: its series come from the leader's scrape. */
  modelFigures(): undefined {
    return undefined;
  }

  heldMetadata(): Record<string, Metadata> {
    return {};
  }

  execInJob(): ExecSession {
    throw this.leaderOnly('a command inside a job');
  }

  checkExec(): void {
    throw this.leaderOnly('a command inside a job');
  }

  agentChannel(): void {
    throw this.leaderOnly("an agent's channel");
  }

  agentStart(): Promise<StartResponse> {
    throw this.leaderOnly('the agent protocol');
  }

  agentLogs(): Promise<void> {
    throw this.leaderOnly('the agent protocol');
  }

  agentHeartbeat(): Promise<HeartbeatResponse> {
    throw this.leaderOnly('the agent protocol');
  }

  agentWaiting(): void {
    throw this.leaderOnly('the agent protocol');
  }

  agentFinish(_jobId: number, _result: FinishRequest): Promise<number | null> {
    throw this.leaderOnly('the agent protocol');
  }

  pilotNext(): Promise<PilotNext> {
    throw this.leaderOnly('the agent protocol');
  }

  artifactAttempt(): number {
    throw this.leaderOnly('the agent protocol');
  }

  private leaderOnly(what: string): UnavailableError {
    const leader = this.leader();
    if (this.rebuilding())
      return new UnavailableError(
        `${what}: this replica was just elected and is rebuilding its scheduler; try again`,
        1,
      );
    return new UnavailableError(
      leader
        ? `${what} is served by the leading replica (${leader}), which this replica could not reach`
        : `${what} is served by the leading replica, and none leads at the moment (an election is under way)`,
      2,
    );
  }
}
