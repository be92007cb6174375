/**
 * What every part of the controller shares: its settings, the in-memory model of unfinished
 * jobs, the journal that records transitions, the pools, and the loop's wake-up. Built once by
 * controller.ts and handed to each part.
 */
import type { TargetConfig } from '../config/schema.js';
import type { JobState } from '../domain/job.js';
import type { RuntimeHistory } from '../domain/runtime-history.js';
import type { Factory } from '../factories/factory.js';
import type { RecentArrivals } from '../scheduler/recent-arrivals.js';
import type { ControllerMetrics } from '../metrics/metrics.js';
import type { SchedulerApi } from '../scheduler/types.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { LogStore } from '../store/log-store.js';
import type { Db, Store } from '../store/store.js';
import type { Well } from '../wells/well.js';
import type { ArrayThrottles } from './array-throttles.js';
import type { Journal } from './journal.js';
import type { Pools } from './pool.js';
import type { StopSignals } from './stop-signals.js';
import type { TrackedJob, TrackedJobs } from './tracked-jobs.js';

export interface ControllerOptions {
  store: Store;
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
  /**
   * Checks, inside each transaction of the rebuild on start, that this server still leads (the
   * group commit's batches check it themselves); throws to refuse the write. Replicas only.
   */
  fence?: (tx: Db) => Promise<void>;
  /**
   * A transition could not be written (the store failed): the model no longer matches the store.
   * A replica steps down and rebuilds from the store; without this, the failure is only reported.
   */
  onWriteFailed?: (err: unknown) => void;
  /** Where timings and counts go (GET /metrics); none in tests that do not look. */
  metrics?: ControllerMetrics;
  /** A job changed (a transition, a cancel request, its cleanup): for the live stream. */
  onJobChanged?: (id: number, project: string, state: JobState, reason: string) => void;
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
}
