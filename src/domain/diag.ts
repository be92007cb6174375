/**
 * What `berth diag` shows (`GET /diag`): a server's figures since it started, as Slurm's sdiag
 * gives Slurm's — kept by the server's metrics (metrics/diag.ts), shown by the CLI.
 */

/** A cycle's figures since start, as sdiag gives its main and backfill cycles. */
export interface CycleView {
  count: number;
  lastSeconds: number;
  meanSeconds: number;
  maxSeconds: number;
}

/** A route template's requests since start. */
export interface RouteView {
  route: string;
  requests: number;
  meanSeconds: number;
  maxSeconds: number;
}

export interface CallerView {
  /** `user alice`, `project ml` (its project tokens), `jobs` (every job's token), `no API token` (health checks, agents registering with their credentials). */
  caller: string;
  requests: number;
}

/** The whole view. */
export interface DiagView {
  startedAt: string;
  uptimeSeconds: number;
  leading: boolean;
  term: number;
  /** Scheduler passes with pending work, and the controller's reconcile ticks. */
  scheduler: CycleView;
  ticks: CycleView;
  queues: { name: string; pending: number; admitted: number }[];
  /** Per factory: workers alive, and admitted jobs waiting for one. */
  factories: { name: string; inUse: number; waiting: number }[];
  routes: RouteView[];
  callers: CallerView[];
}
