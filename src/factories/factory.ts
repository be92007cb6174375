/**
 * Factories make and destroy workers for targets. The controller records every worker before
 * asking the factory to create it and keeps the record until the factory confirms destruction.
 */
export interface WorkerHandle {
  /** Working directory of the worker (local factory). */
  workdir?: string;
  /** Process group of the job, once started. */
  pid?: number;
  [key: string]: unknown;
}

export interface WorkerRequest {
  workerId: number;
  jobId: number;
  target: string;
  /** Where the agent reaches the server, and its job-scoped token. */
  url: string;
  token: string;
}

/** What a factory tells the controller on its own initiative. */
export interface FactoryListener {
  /** The worker's handle changed (e.g. its process started): persist it for crash recovery. */
  handleChanged(workerId: number, handle: WorkerHandle): void;
  /** The worker died without its agent reporting an outcome. */
  workerLost(workerId: number, message: string): void;
}

export interface Factory {
  readonly name: string;
  readonly kind: string;
  readonly capacity: number;
  /** Creates the worker and starts its agent; resolves with the handle to record. */
  create(req: WorkerRequest): Promise<WorkerHandle>;
  /** Destroys the worker and everything in it; must succeed for a worker already gone. */
  destroy(workerId: number, handle: WorkerHandle | null): Promise<void>;
  close(): Promise<void>;
}
