/**
 * The agent protocol: plain HTTPS/HTTP calls under /api/v1/job/self, authenticated with a token
 * scoped to one job. Nothing in it assumes the agent runs on the server's machine, so the same
 * agent serves the local factory and remote workers.
 *
 *   POST /job/self/start?rank=R&host=H → StartResponse   (marks the job running)
 *                                      or 202, no body: a gang's other ranks are not here yet;
 *                                      call again (a long poll)
 *   POST /job/self/logs   (octet-stream) → 204           (appends output, in order, byte for byte)
 *   POST /job/self/heartbeat?wait=S&rank=R → HeartbeatResponse (long poll: returns early on cancel)
 *   POST /job/self/artifacts?name=N (octet-stream) → 201  (keeps a file; 413 past the run's limit;
 *                                      before finish, rank 0 only: agent/artifacts.ts)
 *   POST /job/self/waiting WaitingRequest → 204         (before the start: what the agent does
 *                                      first, its image's pull, shown as the job's reason)
 *   POST /job/self/finish?rank=R FinishRequest → 204
 *   POST /job/self/finish?next=S FinishRequest → NextJob   (a pilot's agent: its worker's next
 *                                      job, long-polled up to S seconds; 204 if it is not kept)
 *
 * `rank` (default 0) says which member of a gang job (`workers` > 1) the agent runs; `host` is
 * the name its peers reach it by. A one-worker job has one member, rank 0.
 */
/**
 * An agent that cannot reach the server retries, backing off to at most this long between tries
 * (for a minute by default): so after a restart it is back within this long of the server.
 */
export const AGENT_RETRY_MAX_DELAY_MS = 2000;

export interface StartResponse {
  jobId: number;
  project: string;
  command: string[];
  env: Record<string, string>;
  /** Metadata of each managed resource the job holds, by resource type. */
  resources: Record<string, Record<string, string>>;
  timeoutSeconds: number | null;
  /** Between SIGTERM and SIGKILL when the job is stopped. */
  graceSeconds: number;
  /** Longest the agent may stay silent before the server declares the worker lost. */
  heartbeatSeconds: number;
  /** This member's rank, 0 to worldSize − 1 (BERTH_RANK). */
  rank: number;
  /** How many members the job has: its `workers` (BERTH_WORLD_SIZE). */
  worldSize: number;
  /** Every member's host, by rank (BERTH_HOSTS, comma-separated). */
  hosts: string[];
  /**
   * Glob patterns of the files to upload as artifacts once the command has ended (exited or timed
   * out), relative to the working directory. Given to rank 0 only; absent: none (also from a
   * server older than artifacts).
   */
  artifacts?: string[];
  /**
   * An interactive job (`berth run -it`): its command runs on a terminal the agent holds
   * (job-terminal.ts), once a client has attached; it ends after `detachGraceSeconds` with none
   * attached, or `idleTimeoutSeconds` with no input and no output (config `interactive`).
   */
  interactive?: { idleTimeoutSeconds: number; detachGraceSeconds: number };
}

/** Which member of its job an agent runs, and the host its peers reach it by. */
export interface Member {
  rank: number;
  host: string;
}

/** The member of a one-worker job. */
export const ONLY_MEMBER: Member = { rank: 0, host: '' };

export interface HeartbeatResponse {
  cancel: boolean;
  reason?: string;
}

export type Outcome = 'exited' | 'timeout' | 'cancelled' | 'start-failed';

export interface FinishRequest {
  outcome: Outcome;
  /** Exit code; 128 + N for a process killed by signal N; null when it never started. */
  exitCode: number | null;
  signal: string | null;
  message?: string;
  /**
   * Before its start only (a job that never ran): the worker could not run it, through no fault
   * of the job (its node could not pull the image). Retried on the infrastructure's budget.
   */
  infrastructure?: boolean;
}

/** What keeps a job that has a worker from starting (its agent pulls its image); null: nothing now. */
export interface WaitingRequest {
  reason: string | null;
}

/**
 * The OCI image an agent runs its job in, pinned to a digest, with what the pull needs: given at
 * registration (or with a pilot's next job), answers the worker's own credential gets — never the
 * job's token, which the job's code holds.
 */
export interface AgentImage {
  /** `registry/name:tag@sha256:…` (or without the tag). */
  reference: string;
  /** The registry is spoken to over plain HTTP (one of the server's `images.insecureRegistries`). */
  insecure?: boolean;
  /** The job's project's login to the registry, when it has one. */
  login?: { registry: string; username: string; password: string };
}

/**
 * A pilot's next job (POST /api/v1/agent/next, or the answer to its last job's finish with
 * `next`): the job with its token and, once it already runs, what to run (no start call then);
 * or ask again; or stop.
 */
export type NextJob =
  | { jobId: number; token: string; start?: StartResponse; image?: AgentImage }
  | { wait: true }
  | { stop: string };

export const JOB_SELF = '/api/v1/job/self';

/**
 * The header a pilot's agent sends its worker credential in when its finish asks for the next
 * job (`/finish?next=`): the job's token alone, which the job's code holds, gets no next job.
 */
export const WORKER_CREDENTIAL_HEADER = 'berth-worker-credential';
