/**
 * What every part of the controller shares: its settings, the in-memory model of unfinished
 * jobs, the journal that records transitions, the pools, and the loop's wake-up. Built once by
 * controller.ts and handed to each part.
 */
import type { ImageReference } from '../images/reference.js';
import type { CachedImageView } from '../domain/image.js';
import type { RegistryAuth } from '../domain/registry-credential.js';
import type { TargetConfig } from '../config/schema.js';
import type { RuntimeHistory } from '../domain/runtime-history.js';
import type { Factory } from '../factories/factory.js';
import type { RecentArrivals } from '../scheduler/recent-arrivals.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { SchedulerApi } from '../scheduler/types.js';
import type { LogStore } from '../store/log-store.js';
import type { Well } from '../wells/well.js';
import type { ArrayThrottles } from './array-throttles.js';
import type { Journal, JournalOptions } from './journal.js';
import type { Pools } from './pool.js';
import type { StopSignals } from './stop-signals.js';
import type { TrackedJobs } from './tracked-jobs.js';
import type { TrackedJob } from './model.js';
import type { BackgroundWork } from './background.js';

/** The journal's settings (journal.ts) and the rest. */
export interface ControllerOptions extends JournalOptions {
  scheduler: SchedulerApi;
  factories: Map<string, Factory>;
  wells: Map<string, Well>;
  targets: Record<string, TargetConfig>;
  /** The resource types, for the privileges their use needs. */
  resources?: Record<string, { privilege?: string }>;
  logs: LogStore;
  /** The most output one run of a job keeps (config `logs.maxBytesPerJob`); absent: no bound. */
  maxLogBytesPerRun?: number;
  /** Where agents reach the server (known once it listens). */
  serverUrl: () => string;
  graceSeconds: number;
  heartbeatSeconds: number;
  /** Interactive jobs' bounds (config `interactive`); absent: 1 h idle, 10 min without a terminal. */
  interactive?: { idleTimeoutSeconds: number; detachGraceSeconds: number };
  resyncMs?: number;
  onError?: (err: unknown, what: string) => void;
  /** Where timings and counts go (GET /metrics); none in tests that do not look. */
  metrics?: ControllerMetrics;
  /** What a tag stands for now, asked of its registry (images/skopeo.ts); absent: no job may ask for an image. */
  images?: ImageDigests;
  /** The images on this machine, for `berth images` (factories/worker-images.ts); absent: none run here. */
  machineImages?: MachineImages;
}

/** The images on the leader's machine: listed, and pruned of those no job holds. */
export interface MachineImages {
  list(): CachedImageView[];
  prune(): Promise<CachedImageView[]>;
}

/** The registry's answer to which digest an image reference stands for, and a project's login to it. */
export interface ImageDigests {
  /**
   * What `ref` stands for, asked with `project`'s login to its registry (if it has one). Rejects
   * with a RegistryError (images/skopeo.ts) saying whose failure it is.
   */
  resolve(ref: ImageReference, project: string): Promise<string>;
  /** `project`'s login to `registry`, in the clear for one pull; undefined when it has none. */
  login(project: string, registry: string): Promise<RegistryAuth | undefined>;
}

export interface ControllerCore {
  readonly o: ControllerOptions;
  readonly jobs: TrackedJobs;
  readonly journal: Journal;
  readonly pools: Pools<TrackedJob>;
  readonly signals: StopSignals;
  /** Arrays' throttles: how many of a throttled array's tasks are in play. */
  readonly throttles: ArrayThrottles;
  /** Runtimes observed per kind of job, for start-time estimates (start-estimates.ts). */
  readonly runtimes: RuntimeHistory;
  /** Jobs handed to the scheduler of late, taken to repeat in start-time estimates' forecasts. */
  readonly arrivals: RecentArrivals<TrackedJob>;
  /** Asks the loop for a pass soon (coalesced; none while the model is rebuilt on start). */
  wake(): void;
  /** Logs a failure of background work that has no caller to report to. */
  report(err: unknown, what: string): void;
  /** Work nobody awaits, which a stop waits for (background.ts). */
  readonly background: BackgroundWork;
}
