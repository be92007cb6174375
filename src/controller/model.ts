/**
 * The controller's model: what it tracks of each unfinished job (TrackedJob) and of each worker
 * or resource instance a job holds (Holding). A leaf of the controller — it imports none of its
 * parts, so every part can import it without a cycle. The two parts a job points at while it runs
 * or waits, its gang and the pool it waits in, appear here as what the others ask of them
 * (GangRun, WaitingPlace), which gang.ts and pool.ts implement.
 */
import type { FinishRequest } from '../agent/protocol.js';
import type { ActiveJob } from '../domain/job.js';
import type { Dependency } from '../domain/dependency.js';
import type { StopKind } from '../domain/job-transitions.js';
import type { Metadata } from '../domain/resource-instance.js';
import type { RetriesUsed, RetryPolicy } from '../domain/retry.js';
import type { WorkerHandle } from '../domain/worker.js';

export interface TrackedJob extends ActiveJob {
  name: string;
  /**
   * Who submitted it, its requests per worker as submitted, and when its current attempt was
   * queued: what its allocations' rows in the usage ledger name (domain/usage.ts).
   */
  createdBy: string;
  submittedRequests: Record<string, string>;
  queuedAt: number;
  /** What its agent runs (served by agentStart without a store read). */
  command: string[];
  env: Record<string, string>;
  /**
   * The image it runs in, as its spec keeps it (`…@sha256:…` once pinned); undefined: none. Pinned
   * before it waits for anything else once admitted (provisioning.ts).
   */
  image: string | undefined;
  /** While its image's digest is being asked of the registry. */
  pinning: boolean;
  /**
   * Whether the registry has answered for its image, with its project's login, since this server
   * tracks it: asked of a job given a digest too (another project's pull of it is no proof).
   */
  imageChecked: boolean;
  /** A task's array (its first task's id), index, and the array's throttle; null otherwise. */
  arrayId: number | null;
  arrayIndex: number | null;
  arrayThrottle: number | null;
  /** A task waiting for its turn under its array's throttle (array-throttles.ts). */
  throttled: boolean;
  /** The glob patterns of the files it keeps (served to rank 0 by agentStart). */
  artifacts: string[];
  /** Run on a terminal its submitter attaches to (`berth run -it`, agent/job-terminal.ts). */
  interactive: boolean;
  /** Attempts that ended before the current one (evictions and retries). */
  attempts: number;
  /** Its retry budgets and backoff, and the retries used of each (domain/retry.ts). */
  retryPolicy: RetryPolicy;
  retriesUsed: RetriesUsed;
  /** While it waits to be retried: when it goes back to its queue, and the timer that sends it. */
  retryAt: number | null;
  retryTimer: NodeJS.Timeout | null;
  /** Why its last attempt failed, while it waits to be retried (its live reason says it). */
  retryAfter: string;
  workerId: number | null;
  lastHeartbeat: number;
  stopping: StopKind | null;
  stopReason: string;
  stopRequestedAt: number;
  /** What it must wait for before it may be queued (its dependencies, every kind). */
  dependencies: Dependency[];
  /** Set while the job waits for its dependencies: those not yet ended. */
  waitingFor: Dependency[];
  /** Resource types it needs, in acquisition (lexicographic) order. */
  resources: string[];
  /** How many of `resources` it holds. */
  acquired: number;
  /**
   * Keys of the workers and instances it holds (see Holding below); shared and empty until it holds
   * one, so added to only through ownHoldings.
   */
  holdings: Set<string>;
  /** The pool it waits in, if any. */
  waitingIn: WaitingPlace | null;
  /** Failed attempts to create its current resource. */
  createFailures: number;
  /** Whether an agent token may exist for it (none is made for in-process workers). */
  mayHoldToken: boolean;
  /**
   * Its ending (the write of its terminal state), set the moment it begins: from then on nothing is handed to
   * it and no second ending is begun, though the store may not have the state yet.
   */
  ending: Promise<void> | null;
  /** Set once its cleanup is being recorded, so that it is recorded once. */
  cleaning: boolean;
  /** A privilege its project lost while it was queued: it waits outside the scheduler for it. */
  parkedFor: string | null;
  /** Why its worker has not started, as its factory tells (Slurm's pending reason). */
  workerWait: string | null;
  /** How many workers it runs on at once; more than 1 makes it a gang job. */
  workers: number;
  /** A gang job's members while it has its worker; null otherwise. */
  gang: GangRun | null;
  /** The write of its start, while one is under way (its members may ask at once). */
  starting: Promise<void> | null;
}

/** What a rank's report means for the run. */
export type RankReport =
  /** Others still run: wait for them. */
  | { kind: 'wait' }
  /** The first failure: stop the other ranks (`reason`), then wait for them. */
  | { kind: 'stop-others'; reason: string }
  /** Every rank has reported: the run ended with `result`. */
  | { kind: 'done'; result: FinishRequest };

/** The members of a gang job's run, one agent per rank (gang.ts). */
export interface GangRun {
  /** Each rank's host, once it has arrived. */
  readonly hosts: readonly (string | null)[];
  /** Every rank has arrived: their hosts are known. */
  readonly complete: boolean;
  /** A rank asks to start; whether all ranks are here now. */
  arrive(rank: number, host: string, now: number): boolean;
  /** A rank was heard from. */
  beat(rank: number, now: number): void;
  /** When the rank heard from longest ago was last heard. */
  oldestHeard(now: number): number;
  /** A rank reports its end: what that means for the run. */
  report(rank: number, result: FinishRequest): RankReport;
  /** The first failure, once one rank has failed. */
  failure(): FinishRequest | null;
}

/** The waiting line of a pool (pool.ts), as a job waiting in it sees it. */
export interface WaitingPlace {
  /** Why job `id` waits here, and where it stands. */
  describeWait(id: number): string;
  /** Job `id` no longer waits here. */
  leave(id: number): void;
}

export type HoldingKind = 'worker' | 'instance';

export interface Holding {
  kind: HoldingKind;
  id: number;
  jobId: number;
  /** Factory name (worker) or resource type (instance). */
  provider: string;
  handle: WorkerHandle | null;
  metadata: Metadata | null;
  /** Units of its pool it takes: a gang's worker takes one per member. */
  units: number;
  /** A worker's devices of its factory's machine, by kind: how many it holds (pool.ts). */
  devices?: Record<string, number>;
  destroying: boolean;
  /** Its provider confirmed its destruction, and its units went back to their pool. */
  freed: boolean;
  destroyAttempts: number;
  nextDestroyAt: number;
  /** A pilot worker: the project it serves, that of its first job (controller/pilots.ts). */
  serves?: string;
}

export const holdingKey = (kind: HoldingKind, id: number): string => `${kind}:${id}`;
