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
  /** The devices each member holds, by rank (domain/devices.ts): kind → device ids. */
  devices?: Record<string, string[]>[];
  [key: string]: unknown;
}

/**
 * How many devices of each kind a worker holds, by its handle: what stays taken of its factory
 * until it is destroyed, also across a restart.
 */
export function heldDevices(handle: WorkerHandle | null): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const member of Array.isArray(handle?.devices) ? handle.devices : [])
    for (const [kind, ids] of Object.entries(member))
      if (Array.isArray(ids)) counts[kind] = (counts[kind] ?? 0) + ids.length;
  return counts;
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
