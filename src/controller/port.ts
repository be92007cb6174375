/**
 * What the rest of the server may ask of the controller: the services and the API see only this
 * port, never the class behind it (controller.ts), so the controller's parts can change freely.
 * It is three ports, one per audience, which a caller names when it needs only one: the services'
 * committed changes (`ControllerCommands`), the agents' protocol (`AgentProtocol`), and the read
 * side from memory (`ControllerReadModel`). A follower replica's port (replicas/follower-port.ts)
 * forwards the first, refuses the second, and reads the leader's published figures for the third.
 */
import type { CachedImageView } from '../domain/image.js';
import type { ForecastInput } from '../scheduler/forecast.js';
export type { ForecastInput, ForecastPending } from '../scheduler/forecast.js';
import type { ChannelSocket, ExecRun, ExecSession } from '../factories/factory.js';
export type { ChannelSocket } from '../factories/factory.js';
export type { ExecRun, ExecSession, ExecListener, TerminalSize } from '../factories/factory.js';
import type { FinishRequest, HeartbeatResponse, Member, StartResponse } from '../agent/protocol.js';
/** The image an agent on another machine pulls for its job (service/cluster/agent-registration.ts). */
export type { AgentImage } from '../agent/protocol.js';
import type { Blocker } from '../domain/blocker.js';
import type { ClusterQueue } from '../domain/cluster-queue.js';
import type { JobRecord } from '../domain/job.js';
import type { ProjectAccess } from '../domain/project.js';
import type { PoolFigures } from '../domain/pool-figures.js';
import type { Metadata } from '../domain/resource-instance.js';
import type { QueueFigures, QueueModel } from '../scheduler/types.js';
import type { ModelFigures } from '../metrics/model-metrics.js';

/** What a pilot's agent is told when it asks for its next job. */
export type PilotNext =
  | {
      jobId: number;
      /** The job's token; absent for a job adopted after a restart (a new one is made). */
      token?: string;
      /** What to run, the job already running; absent when the agent must start it itself. */
      start?: StartResponse;
    }
  | { wait: true }
  | { stop: string };

/** When a pending job is expected to start (start-estimates.ts). */
export interface StartEstimate {
  /** Expected admission (ms), or null when the forecast does not reach it. */
  startAt: number | null;
  /** How it was made, or why there is none. */
  how: string;
}

export type { QueueFigures, QueueModel };

/** Where an unfinished job stands, from the in-memory model. */
export interface LiveStatus {
  reason: string;
  /** 1-based place in its cluster queue while the scheduler holds it; else null. */
  position: number | null;
  projectPosition?: number;
  blockers?: Blocker[];
  /** Just submitted: no pass has weighed it yet (scheduler/types.ts, Explanation). */
  provisional?: true;
  /** While the scheduler holds it: when it is expected to start (start-estimates.ts). */
  estimate?: StartEstimate;
}

/**
 * A queue's live figures, with how many of its admitted jobs have started, and how many jobs the
 * controller has admitted there since it started (a counter: the queue history takes differences).
 */
export type LiveQueueFigures = QueueFigures & { running: number; admissions: number };

/** The agent protocol (agent/protocol.ts) as the controller serves it; the API maps HTTP onto it. */
export interface AgentProtocol {
  /** Null while a gang's other members have not arrived: a long poll up to `waitMs`, asked again. */
  agentStart(jobId: number, member?: Member, waitMs?: number): Promise<StartResponse | null>;
  agentLogs(jobId: number, data: Buffer): Promise<void>;
  /** Long poll: counts as a heartbeat; returns early when the job must stop. */
  agentHeartbeat(jobId: number, waitMs: number, rank?: number): Promise<HeartbeatResponse>;
  /** Resolves with the worker's id if it stays, a pilot, for its next job; else null. */
  agentFinish(jobId: number, result: FinishRequest, rank?: number): Promise<number | null>;
  /** What keeps a job whose worker is up from starting (its agent pulls the image); null: nothing. */
  agentWaiting(jobId: number, reason: string | null): void;
  /**
   * The run an artifact the agent uploads now belongs to: the job's attempts + 1. Only while the
   * job runs (else an UnauthorizedError, as for the other calls); counts as rank 0's heartbeat.
   */
  artifactAttempt(jobId: number): number;
  /** A pilot worker's agent asks for its next job (long poll; see pilots.ts). */
  pilotNext(workerId: number, waitMs: number): Promise<PilotNext>;
}

/** The changes the services have committed, told to the controller (also by control messages). */
export interface ControllerCommands {
  /** A job was committed to the store as queued (a job it already tracks is ignored). */
  jobSubmitted(job: JobRecord): Promise<void>;
  /** Cancels an unfinished job; a ConflictError if it has already finished. */
  cancel(id: number, by: string): Promise<void>;
  /** A cluster queue was created or changed (`queue`), or deleted (undefined). */
  queueChanged(name: string, queue: ClusterQueue | undefined): void;
  /** A project's fair-share weight changed (or is loaded on start). */
  setProjectWeight(project: string, weight: number): void;
  /**
   * Projects were moved to other queues (their queued jobs moved there in the store) or their
   * privileges changed: their queued jobs follow, and wait while a privilege they need is gone.
   */
  projectsChanged(projects: ProjectAccess[]): Promise<void>;
  /** A project was deleted; its jobs `jobIds` still unfinished are now filed under `archivedAs`. */
  projectDeleted(project: string, archivedAs: string, jobIds: number[]): void;
}

/** The read side, from the controller's memory: live reasons, positions, figures. */
export interface ControllerReadModel {
  /** The live reason and position of an unfinished job; undefined once it has finished. */
  /** `withEstimate`: also its start-time estimate, which may cost a forecast (start-estimates.ts). */
  explain(id: number, withEstimate?: boolean): LiveStatus | undefined;
  /** Whether the job is known and has not finished. */
  isActive(id: number): boolean;
  /**
   * How many of the project's jobs are queued (waiting for admission), from memory; undefined
   * where this replica does not hold the model (a follower).
   */
  queuedJobs(project: string): number | undefined;
  /** Every cluster queue's model, as of the last committed change. */
  queueModels(): Iterable<QueueModel>;
  queueFigures(name: string): LiveQueueFigures | undefined;
  /** Every cluster queue's figures (for the metrics gauges). */
  queueFiguresAll(): Iterable<QueueFigures & { name: string }>;
  /** A page of a queue's pending job ids, in admission order. */
  pendingIds(queue: string, offset: number, limit: number): number[];
  /**
   * What start-time estimates forecast from, now (`GET /scheduler/forecast-input`); undefined where
   * this replica does not hold the model (a follower).
   */
  forecastInput(): ForecastInput | undefined;
  factoryFigures(): PoolFigures[];
  resourceFigures(): PoolFigures[];
  /**
   * The model as the metrics' gauges read it at each scrape (metrics/model-metrics.ts); undefined
   * where this replica does not hold the model (a follower).
   */
  modelFigures(): ModelFigures | undefined;
  /** The metadata of the resources job `id` holds: for that job only (GET /job/self). */
  heldMetadata(id: number): Record<string, Metadata>;
  /**
   * `berth exec`: `command` run inside member `rank` of running job `jobId` (its factory's exec);
   * a ConflictError when it does not run, or its factory cannot.
   */
  execInJob(jobId: number, rank: number, run: ExecRun): ExecSession;
  /** Whether an exec in member `rank` of job `jobId` would start now: the error it would meet. */
  checkExec(jobId: number, rank: number): void;
  /**
   * A remote agent's channel for member `rank` of worker `workerId` (factories/agent-channels.ts),
   * taken by the worker's factory; without `socket`, only whether it would be (the error it would meet).
   */
  agentChannel(workerId: number, rank: number, socket?: ChannelSocket): void;
  /** The OCI images on the machine whose factories this controller runs (`GET /images`); [] where none run. */
  images(): CachedImageView[];
  /** Removes the images no job holds (`POST /images/prune`); returns them. */
  pruneImages(): Promise<CachedImageView[]>;
}

export interface ControllerPort extends ControllerCommands, AgentProtocol, ControllerReadModel {}
