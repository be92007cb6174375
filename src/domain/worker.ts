/**
 * Workers: what a factory makes for one job's target (a local process group, a Slurm job). Every
 * worker is recorded before it is made and kept on record until its destruction is confirmed.
 */

/** creating → ready → destroying → destroyed, or failed when its factory could not make it. */
export const WORKER_STATES = ['creating', 'ready', 'destroying', 'destroyed', 'failed'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];

/** The states of a worker or instance whose destruction is not confirmed yet. */
export const LIVE_STATES = ['creating', 'ready', 'destroying'] as const satisfies readonly WorkerState[];

/** What a factory needs to find a worker again, also after a restart (kept as JSON). */
export interface WorkerHandle {
  /** Working directory of the worker (local factory). */
  workdir?: string;
  /** Process group of the job, once started (a gang's first member's). */
  pid?: number;
  /** A gang's members' process groups (local factory). */
  pids?: number[];
  [key: string]: unknown;
}

/** A worker as the store keeps it. */
export interface WorkerRecord {
  id: number;
  jobId: number;
  factory: string;
  target: string;
  state: WorkerState;
  handle: WorkerHandle | null;
  error: string | null;
}

/** A worker as `GET /workers` shows it. */
export interface WorkerView {
  id: number;
  jobId: number;
  factory: string;
  target: string;
  state: WorkerState;
  error: string | null;
  createdAt: string;
  updatedAt: string;
  heartbeatAt: string | null;
}
