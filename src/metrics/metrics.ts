/**
 * The server's Prometheus metrics (GET /api/v1/metrics). They live in a registry owned by one
 * server instance, not prom-client's global default: tests start many servers in one process.
 *
 * Counters and timings are pushed by the controller through `ControllerMetrics` (optional there,
 * so the controller runs and is tested without metrics); queue and factory gauges are read from
 * the scheduler's in-memory figures at scrape time, so they cost nothing between scrapes.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import type { Amounts } from '../domain/quantity.js';
import type { JobState } from '../domain/job.js';
import type { FailureKind } from '../domain/retry.js';
import type { DiagView } from '../domain/diag.js';
import { CycleStats } from './diag.js';
import { collectedGauge, type SetSample } from './collected-gauge.js';
import { HttpMetrics } from './http-metrics.js';
import { modelGauges, type DeviceFigures, type ModelFigures } from './model-metrics.js';
import { ProjectMetrics } from './project-metrics.js';
import { ProviderMetrics, type ProviderKind } from './provider-metrics.js';
import { baseUnits, QueueMetrics, type EvictionReason, type QueueQuota } from './queue-metrics.js';
import { SchedulerMetrics, type PreemptionReason } from './scheduler-metrics.js';
import { StoreMetrics, type StreamKind } from './store-metrics.js';

export type DecisionKind = 'admit' | 'preempt' | 'drain';

/** What the retention sweep removes (service/upkeep/retention.ts). */
export type RetainedKind = 'jobs' | 'audit' | 'ledger';

/** What the controller reports as it works. */
export interface ControllerMetrics {
  /**
   * Wall time of one scheduler pass that had pending work, how many workloads it tried, and how
   * many of them it admitted.
   */
  schedulerPass(seconds: number, depth?: number, admitted?: number): void;
  /** A job was preempted for a job of `preemptingQueue`. */
  jobPreempted(preemptingQueue: string, reason: PreemptionReason): void;
  decision(kind: DecisionKind): void;
  jobSubmitted(): void;
  jobFinished(state: JobState): void;
  /** A failed job is retried; `kind`: the budget it draws on. */
  jobRetried(kind: FailureKind): void;
  /** Wall time of one reconcile tick (scheduling, recording admissions, dispatch). */
  tick(seconds: number): void;
  /** A job of `project` was admitted to `queue`, `waitSeconds` after it was (re)queued. */
  jobAdmitted(queue: string, waitSeconds: number, project: string): void;
  /** A Backfill queue admitted a job ahead of its reservation's. */
  jobBackfilled(queue: string): void;
  /** A job was admitted `seconds` after the first start-time estimate it was shown (negative: before). */
  startEstimated(seconds: number): void;
  /** A job of `queue` runs, `waitSeconds` after it was (re)queued. */
  jobStarted(queue: string, waitSeconds: number): void;
  /** A job of `queue` lost its quota before it ended. */
  jobEvicted(queue: string, reason: EvictionReason): void;
  /** A factory made a worker, or a well an instance, in `seconds`; null: it failed. */
  created(kind: ProviderKind, provider: string, seconds: number | null): void;
}

export interface QueueLive extends QueueQuota {
  pending: number;
  admitted: number;
  usage: Amounts;
}

export interface FactoryLive extends DeviceFigures {
  name: string;
  inUse: number;
  waiting: number;
}

/** The live figures the gauges show, read at each scrape. */
export interface LiveFigures {
  queues(): Iterable<QueueLive>;
  factories(): Iterable<FactoryLive>;
  /** Whether this replica leads (a server without replicas always does), and the leader's term. */
  leadership?(): { leading: boolean; term: number };
  /** The controller's model (undefined on a follower replica: the leader's series are the leader's). */
  model?(): ModelFigures | undefined;
}

/** The server's choices about its series (config `metrics`). */
export interface MetricsOptions {
  /** Series per project (a label that grows with the tenants): off by default. */
  perProject?: boolean;
}

/**
 * A counter with one label, each of `values` shown at 0 from the start: a rate over a series
 * that appears only when it first moves misses that first move.
 */
function countedBy<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  label: L,
  values: readonly string[],
): Counter<L> {
  const c = new Counter({ name, help, labelNames: [label], registers });
  for (const v of values) c.inc({ [label]: v } as Partial<Record<L, string>>, 0);
  return c;
}

export class Metrics implements ControllerMetrics {
  readonly registry = new Registry();
  private live: LiveFigures | undefined;
  private readonly pass: Summary;
  private readonly decisions: Counter<'kind'>;
  private readonly submitted: Counter;
  private readonly finished: Counter<'state'>;
  private readonly retried: Counter<'kind'>;
  private readonly ticks: Histogram;
  private readonly removed: Counter<'kind'>;
  private readonly pulls: Counter<'outcome'>;
  private readonly pulledBytes: Counter;
  private readonly imageHits: Counter;
  private readonly evictions: Counter;
  private readonly queueMetrics: QueueMetrics;
  private readonly providers: ProviderMetrics;
  private readonly scheduler: SchedulerMetrics;
  private readonly projects: ProjectMetrics | undefined;
  private readonly swept: Gauge<'kind'>;
  private readonly started = Date.now();
  private readonly passStats = new CycleStats();
  private readonly tickStats = new CycleStats();
  /** The API's requests (api/app.ts counts each as it is answered). */
  readonly http: HttpMetrics;
  /** The store's writes and reads (its `observer`) and the streams open on the API. */
  readonly store: StoreMetrics;

  constructor(opts: MetricsOptions = {}) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.pass = new Summary({
      name: 'berth_scheduler_pass_seconds',
      help: 'Wall time of each scheduler pass that had pending work (quantiles over the last 10 minutes)',
      percentiles: [0.5, 0.9, 0.99],
      maxAgeSeconds: 600,
      ageBuckets: 5,
      registers,
    });
    this.decisions = countedBy(
      registers,
      'berth_scheduler_decisions_total',
      'Scheduler decisions carried out, by kind',
      'kind',
      ['admit', 'preempt', 'drain'],
    );
    this.submitted = new Counter({
      name: 'berth_jobs_submitted_total',
      help: 'Jobs submitted (accepted and recorded)',
      registers,
    });
    this.finished = countedBy(
      registers,
      'berth_jobs_finished_total',
      'Jobs that reached a terminal state, by state',
      'state',
      ['succeeded', 'failed', 'cancelled'],
    );
    this.retried = countedBy(
      registers,
      'berth_job_retries_total',
      "Failed jobs retried, by the budget drawn on: the job's own failures, or the infrastructure's",
      'kind',
      ['job', 'infrastructure'],
    );
    this.ticks = new Histogram({
      name: 'berth_controller_tick_seconds',
      help: 'Wall time of each controller reconcile tick',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    // Counted a batch at a time, so that a long sweep's progress shows between scrapes.
    this.removed = countedBy(
      registers,
      'berth_retention_removed_total',
      'What the retention sweep removed, by kind: ended jobs (with their events, attempts and logs), audit rows, ledger allocations',
      'kind',
      ['jobs', 'audit', 'ledger'],
    );
    this.pulls = countedBy(
      registers,
      'berth_image_pulls_total',
      'Pulls of OCI images into this machine’s cache, by outcome',
      'outcome',
      ['pulled', 'failed'],
    );
    this.pulledBytes = new Counter({
      name: 'berth_image_pull_bytes_total',
      help: 'Bytes fetched by the pulls that got their image (compressed, as the registry served them)',
      registers,
    });
    this.imageHits = new Counter({
      name: 'berth_image_cache_hits_total',
      help: 'Images a worker asked for and got without a pull of its own (on disk, or another’s pull)',
      registers,
    });
    this.evictions = new Counter({
      name: 'berth_image_evictions_total',
      help: 'Images removed from the cache: by its bound (images.cacheBytes), least recently used first, or by berth images prune',
      registers,
    });
    this.swept = new Gauge({
      name: 'berth_retention_last_sweep_timestamp_seconds',
      help: 'When the retention sweep last went through everything due of a kind (0: not yet since this server started); only kinds with a retention, on every replica (the leader sweeps)',
      labelNames: ['kind'],
      registers,
    });
    this.http = new HttpMetrics(registers);
    this.store = new StoreMetrics(registers);
    this.providers = new ProviderMetrics(registers);
    this.scheduler = new SchedulerMetrics(registers);
    this.queueMetrics = new QueueMetrics(registers, () => this.live?.queues() ?? []);
    const model = () => this.live?.model?.();
    this.projects = opts.perProject ? new ProjectMetrics(registers, model) : undefined;
    modelGauges(registers, model, () => this.live?.factories() ?? []);
    this.liveGauges(registers);
  }

  /** A pull ended: the bytes it fetched, or null when it failed. */
  imagePulled(bytes: number | null): void {
    this.pulls.inc({ outcome: bytes === null ? 'failed' : 'pulled' });
    if (bytes !== null) this.pulledBytes.inc(bytes);
  }

  imageCacheHit(): void {
    this.imageHits.inc();
  }

  imageEvicted(): void {
    this.evictions.inc();
  }

  /** Where the gauges read their figures (the controller, once it exists). */
  observe(live: LiveFigures): void {
    this.live = live;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition text of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  schedulerPass(seconds: number, depth = 0, admitted = 0): void {
    this.pass.observe(seconds);
    this.passStats.observe(seconds);
    this.scheduler.pass(seconds, depth, admitted);
  }

  jobPreempted(preemptingQueue: string, reason: PreemptionReason): void {
    this.scheduler.jobPreempted(preemptingQueue, reason);
  }

  jobBackfilled(queue: string): void {
    this.scheduler.jobBackfilled(queue);
  }

  startEstimated(seconds: number): void {
    this.scheduler.startEstimated(seconds);
  }

  decision(kind: DecisionKind): void {
    this.decisions.inc({ kind });
  }

  jobSubmitted(): void {
    this.submitted.inc();
  }

  jobFinished(state: JobState): void {
    this.finished.inc({ state });
  }

  jobRetried(kind: FailureKind): void {
    this.retried.inc({ kind });
  }

  tick(seconds: number): void {
    this.ticks.observe(seconds);
    this.tickStats.observe(seconds);
  }

  /** What `berth diag` shows, now. */
  diag(now = Date.now()): DiagView {
    const lead = this.live?.leadership?.() ?? { leading: true, term: 0 };
    return {
      startedAt: new Date(this.started).toISOString(),
      uptimeSeconds: Math.round((now - this.started) / 1000),
      leading: lead.leading,
      term: lead.term,
      scheduler: this.passStats.view(),
      ticks: this.tickStats.view(),
      queues: [...(this.live?.queues() ?? [])].map((q) => ({
        name: q.name,
        pending: q.pending,
        admitted: q.admitted,
      })),
      factories: [...(this.live?.factories() ?? [])].map((f) => ({
        name: f.name,
        inUse: f.inUse,
        waiting: f.waiting,
      })),
      routes: this.http.tally.busiestRoutes(),
      callers: this.http.tally.busiestCallers(),
    };
  }

  jobAdmitted(queue: string, waitSeconds: number, project: string): void {
    this.queueMetrics.admitted(queue, waitSeconds);
    this.projects?.admitted(project, waitSeconds);
  }

  jobStarted(queue: string, waitSeconds: number): void {
    this.queueMetrics.started(queue, waitSeconds);
  }

  jobEvicted(queue: string, reason: EvictionReason): void {
    this.queueMetrics.evictedFrom(queue, reason);
  }

  created(kind: ProviderKind, provider: string, seconds: number | null): void {
    this.providers.created(kind, provider, seconds);
  }

  /** A stream of `kind` opened on the API (berth_open_streams): the function returned counts its close, once. */
  streamOpened(kind: StreamKind): () => void {
    return this.store.streamOpened(kind);
  }

  /** The configured factories and wells, whose series show from the start. */
  providersKnown(factories: string[], wells: string[]): void {
    this.providers.known(factories, wells);
  }

  /** One batch of the retention sweep removed `n` rows of `kind`. */
  retentionRemoved(kind: RetainedKind, n: number): void {
    this.removed.inc({ kind }, n);
  }

  /** The kinds kept for a while (a retention other than forever): their sweep's series show from the start, at 0. */
  retentionKept(kinds: RetainedKind[]): void {
    for (const kind of kinds) this.swept.set({ kind }, 0);
  }

  /** The sweep went through everything of `kind` older than its retention, at `at` (ms). */
  retentionSwept(kind: RetainedKind, at: number): void {
    this.swept.set({ kind }, at / 1000);
  }

  private liveGauges(registers: Registry[]): void {
    // Each gauge is refilled from the live figures when scraped (`this` is the gauge there).
    const metrics = () => this.live;
    const perQueue = <L extends string>(
      name: string,
      help: string,
      labelNames: L[],
      fill: (set: SetSample<L>, q: QueueLive) => void,
    ) =>
      collectedGauge(registers, name, help, labelNames, (set) => {
        for (const q of metrics()?.queues() ?? []) fill(set, q);
      });
    perQueue(
      'berth_queue_pending_jobs',
      'Jobs waiting for admission, per cluster queue',
      ['queue'],
      (set, q) => set({ queue: q.name }, q.pending),
    );
    perQueue('berth_queue_admitted_jobs', 'Jobs holding quota, per cluster queue', ['queue'], (set, q) =>
      set({ queue: q.name }, q.admitted),
    );
    perQueue(
      'berth_queue_usage',
      'Quota in use per cluster queue and resource, in base units (cpu in cores)',
      ['queue', 'resource'],
      (set, q) => {
        for (const [resource, amount] of Object.entries(q.usage))
          set({ queue: q.name, resource }, baseUnits(resource, amount));
      },
    );
    const perFactory = (name: string, help: string, value: (f: FactoryLive) => number) =>
      collectedGauge(registers, name, help, ['factory'], (set) => {
        for (const f of metrics()?.factories() ?? []) set({ factory: f.name }, value(f));
      });
    const leader = (name: string, help: string, value: (l: { leading: boolean; term: number }) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const l = metrics()?.leadership?.();
          if (l) this.set(value(l));
        },
      });
    leader(
      'berth_leader',
      'Whether this replica leads (runs the scheduler and the factories): 1 or 0; a server without replicas is always 1',
      (l) => (l.leading ? 1 : 0),
    );
    leader(
      'berth_leader_term',
      "The leader's term as this replica knows it (0 without replicas)",
      (l) => l.term,
    );
    perFactory('berth_factory_workers_in_use', 'Workers alive (created, not yet destroyed)', (f) => f.inUse);
    perFactory('berth_factory_waiting_jobs', 'Admitted jobs waiting for a worker', (f) => f.waiting);
  }
}
