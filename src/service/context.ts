import type { SecretBox } from '../store/secret-box.js';
import type { Amounts } from '../domain/quantity.js';
import type { ControllerPort } from '../controller/port.js';
import type { LogStore } from '../store/log-store.js';
import type { TargetConfig } from '../config/schema.js';
import type { ProjectCache } from './tenancy/project-cache.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { ChangeFeed } from './live/change-feed.js';
import type { TokenCache } from './tenancy/token-cache.js';
import type { Notices } from './live/notices.js';
import type { ArtifactFiles } from '../store/artifact-files.js';
import type { QueueHistoryView } from '../domain/queue-history.js';

/** What job endpoints need beyond the store: the configured targets and the live controller. */
export interface JobRuntime {
  targets: Record<string, TargetConfig>;
  defaultTarget: string;
  resourceTypes: Record<string, { privilege?: string }>;
  /** Per target, the longest its workers may run, in seconds (a slurm factory's timeLimit). */
  workerTimeLimits?: Record<string, number>;
  /** Per target, the most workers its factory has at once: a gang job larger can never start. */
  workerCapacity?: Record<string, number>;
  /** Per factory, who its jobs run as (factories/isolation.ts), for `GET /targets`. */
  isolation?: Record<string, string>;
  /** Per target whose jobs cannot run in an image, why (its factory's kind, no namespaces). */
  imagesRefused?: Record<string, string>;
  /** Per target whose jobs cannot be interactive (`berth run -it`), why. */
  interactiveRefused?: Record<string, string>;
  /** Registries spoken to over plain HTTP besides the loopback's (`images.insecureRegistries`). */
  insecureRegistries?: string[];
  /** Per factory, its devices (factories/devices.ts): how many of each kind, and in words. */
  devices?: Record<string, { counts: Record<string, number>; summary: string }>;
  controller: ControllerPort;
  logs: LogStore;
  /** Where jobs' artifacts are kept, and the limits on them. */
  artifacts: ArtifactSettings;
}

/** `artifacts` of berth.yaml, with the directory made. */
export interface ArtifactSettings {
  files: ArtifactFiles;
  /** The most bytes one run of a job may keep. */
  maxBytesPerJob: number;
  /**
   * The most files one run of a job may keep, empty ones too (`artifacts.maxFilesPerJob`);
   * absent: DEFAULT_MAX_ARTIFACT_FILES.
   */
  maxFilesPerJob?: number;
  retentionSeconds: number;
}

/** Live figures for a cluster queue, supplied by the scheduler's in-memory model. */
export interface QueueStatus {
  usage: Amounts;
  borrowed: Amounts;
  pending: number;
  admitted: number;
  /** Of the admitted, how many have started (the rest are getting resources or a worker). */
  running: number;
  /**
   * Jobs the leading controller has admitted here since it started: a counter that only grows,
   * except when the controller is replaced (a restart, a new leader). Absent when unknown.
   */
  admissions?: number;
}

/** This replica among the replicas: its role, as `GET /health` tells it, and their shared secret. */
export interface ClusterView {
  role(): 'leader' | 'follower';
  term(): number;
  /** The leader's API, when one is known. */
  leaderUrl(): string | undefined;
  /**
   * A random key all replicas share (kept in the `settings` table): what one replica tells
   * another through a client's request — the client's address — is signed with it.
   */
  secret: string;
}

/**
 * What a service is given: the store and a clock (injected so tests can steer time), which every
 * service has, and the parts of a running server, which come up one by one as it starts (the
 * runtime once the controller is built) and which a test gives only where it needs them. A service
 * that cannot do without a part says so in its type (`With<'runtime'>`); one that reads a part
 * with `?.` does without it (a job's view without its live position, say).
 */
export interface ServiceContext {
  store: Store;
  now: () => number;
  queueStatus?: (name: string) => QueueStatus;
  runtime?: JobRuntime;
  tokenCache?: TokenCache;
  /** Projects and roles for the submissions' checks (service/tenancy/project-cache.ts). */
  projectCache?: ProjectCache;
  /** Shares transactions between concurrent writers (job submissions). */
  groupCommit?: GroupCommit;
  /** The server's Prometheus metrics (GET /metrics). */
  metrics?: Metrics;
  /** Where committed changes are announced (the live stream listens). */
  changes?: ChangeFeed;
  /** Who hears of the changes services commit (service/live/notices.ts): the controller, the live streams, the leader. */
  notices?: Notices;
  /** Which replica leads (replicas on PostgreSQL); absent: this server is the only one. */
  cluster?: ClusterView;
  /** The queues' figures over time (service/live/queue-history.ts), sampled by the server. */
  queueHistory?: { view(name: string, minutes: number): QueueHistoryView };
  /**
   * The box that seals and opens the secrets berth keeps (store/secret-box.ts), opened at first
   * need; throws a SecretKeyError saying why there is none (replicas without `secretKeyFile`).
   */
  secrets?: () => SecretBox;
}

/**
 * A context that holds the parts `K`: what a service declares it needs (`ctx: With<'runtime'>`),
 * so that the compiler, not a check at run time, says it gets them. The API narrows its context
 * once, where a route that needs the parts is served (`running`).
 */
export type With<K extends keyof ServiceContext> = ServiceContext & Required<Pick<ServiceContext, K>>;

/** The context of a server whose controller runs: the API serves only once it does. */
export function running(ctx: ServiceContext): With<'runtime'> {
  if (!ctx.runtime) throw new Error('the server has not started its controller');
  return ctx as With<'runtime'>;
}
