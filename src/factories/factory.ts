/**
 * Factories make and destroy workers for targets. The controller records every worker before
 * asking the factory to create it and keeps the record until the factory confirms destruction.
 */
import type { FinishRequest, HeartbeatResponse, Member, StartResponse } from '../agent/protocol.js';
import type { Amounts } from '../domain/quantity.js';
import type { RegistryAuth } from '../domain/registry-credential.js';
import type { WorkerHandle } from '../domain/worker.js';

export type { WorkerHandle };

export interface WorkerRequest {
  workerId: number;
  jobId: number;
  /** The job's project: whose identity the worker may take (a slurm factory's runAs.projects). */
  project: string;
  target: string;
  /** Where the agent reaches the server. */
  url: string;
  /**
   * The agent's job-scoped token; null for an in-process factory, whose agent needs none, and
   * for one whose agent registers (`registers`).
   */
  token: string | null;
  /** For a factory whose agent registers: its one-time credential (service/cluster/agent-registration.ts). */
  registration?: string;
  /**
   * What each member requests (cpu in millicores, memory in bytes), for a factory that enforces
   * them.
   */
  requests?: Amounts;
  /**
   * How many members the worker runs: a gang job's `workers`, each with an agent of its own and
   * its rank (all of them at once, on as many nodes where the factory has several), else 1. The
   * controller has counted them all against the factory's capacity.
   */
  members: number;
  /**
   * The OCI image its members run in, pinned (`registry/name:tag@sha256:…`): the factory makes it
   * their root (images/, agent/sandbox.ts). Only a factory whose targets allow images is given one.
   */
  image?: string;
  /** The project's login to that image's registry, for this pull only: never kept or logged. */
  imageLogin?: RegistryAuth;
}

/** What a factory tells the controller on its own initiative. */
export interface FactoryListener {
  /** The worker's handle changed (e.g. its process started): persist it for crash recovery. */
  handleChanged(workerId: number, handle: WorkerHandle): void;
  /** The worker died without its agent reporting an outcome. */
  workerLost(workerId: number, message: string): void;
  /**
   * What keeps the worker from starting, in the words of the system it waits in (Slurm's pending
   * reason), shown as the job's reason; null once it no longer waits. Said again at every look
   * while the worker waits (a listener may not know the worker at the first), so it must be cheap.
   */
  workerWaiting?(workerId: number, reason: string | null): void;
}

/**
 * The agent protocol (agent/protocol.ts) as the controller serves it, without HTTP: for agents
 * that run inside the server's own process. Same calls, same rules as over HTTP.
 */
export interface AgentPort {
  /** Null while a gang's other members have not arrived (ask again). */
  agentStart(jobId: number, member?: Member, waitMs?: number): Promise<StartResponse | null>;
  /** Long poll: counts as a heartbeat; returns early when the job must stop. */
  agentHeartbeat(jobId: number, waitMs: number, rank?: number): Promise<HeartbeatResponse>;
  agentFinish(jobId: number, result: FinishRequest, rank?: number): Promise<void>;
  /** Appends the job's output to its log. */
  agentLogs(jobId: number, data: Buffer): Promise<void>;
  /**
   * What the job's agent will be given at its start, without starting it: for a worker that runs
   * its job itself (slurm's direct workers), whose batch script is written before it runs.
   */
  agentSpec(jobId: number): StartResponse;
}

/** A worker a previous run of the server left, whose job would go on if the worker lives. */
export interface LeftWorker {
  workerId: number;
  handle: WorkerHandle | null;
}

export interface Factory {
  readonly name: string;
  readonly kind: string;
  readonly capacity: number;
  /**
   * How many devices of each kind its machine has (domain/devices.ts), for a factory that assigns
   * them: a job's request of a kind then takes that many particular devices, and waits for them.
   */
  readonly devices?: Record<string, number>;
  /**
   * What a worker made for these (per member) requests is allocated with beyond its target, for a
   * factory whose workers differ by request (slurm's `--gres`): a pilot runs only jobs of the same.
   */
  allocationKey?(requests: Record<string, number>): string;
  /**
   * Its agents run in the server's process and speak through the AgentPort: nothing outside
   * calls the API for them, so no job token is made.
   */
  readonly inProcess: boolean;
  /**
   * Its agents run elsewhere and start with a one-time credential that only registers their
   * worker (`berth agent`), rather than with the job's token: what a Slurm job's environment
   * carries must be worthless once used.
   */
  readonly registers?: boolean;
  /**
   * For a factory whose workers outlive the server (a Slurm job does; a local process does not):
   * called once as the controller starts, before any create. Takes over those of `left` that are
   * still alive, and removes everything else of this factory's that it finds outside (a worker
   * no record names), so that nothing is leaked. Resolves with the workers taken over and their
   * current handles; the controller destroys the rest.
   */
  adopt?(left: LeftWorker[]): Promise<Map<number, WorkerHandle>>;
  /**
   * When the worker's own time runs out (a Slurm job's time limit), in ms since the epoch: null
   * if never, undefined if not known (yet). Pilot workers take only jobs that end before it.
   */
  endsAt?(workerId: number): number | null | undefined;
  /** Creates the worker and starts its agent; resolves with the handle to record. */
  create(req: WorkerRequest): Promise<WorkerHandle>;
  /**
   * Destroys the worker and everything in it; must succeed for a worker already gone. A factory
   * may call `stopped` as soon as the worker no longer takes any of its capacity (its processes
   * are gone) while it still cleans up (a directory to remove): its capacity is then free for the
   * next worker, though the worker counts as destroyed only once this resolves.
   */
  destroy(workerId: number, handle: WorkerHandle | null, stopped?: () => void): Promise<void>;
  /**
   * `berth exec`: runs `command` inside member `rank` of a running worker, in its namespaces,
   * groups and uid (agent/exec-process.ts). Absent: the factory cannot (its agents run elsewhere).
   */
  exec?(jobId: number, workerId: number, rank: number, run: ExecRun): ExecSession;
  /**
   * For a factory whose workers' agents run on other machines and dial the server a channel
   * (agent-channels.ts): the channels, over which `berth exec` reaches its jobs instead of `exec`.
   */
  channels?: RemoteSessions;
  close(): Promise<void>;
}

/**
 * What an exec runs: a command (with a terminal of its own, `tty`), or (`forward`) a relay to a TCP
 * port on the loopback of the job's network namespace (`berth port-forward`), or (`attach`) the
 * job's own terminal.
 */
export type ExecRun =
  | { command: string[]; tty?: TerminalSize }
  | { forward: number }
  /** `berth attach`: the interactive job's own terminal (agent/job-terminal.ts), at this size. */
  | { attach: TerminalSize };

/** A terminal's size, in characters. */
export interface TerminalSize {
  cols: number;
  rows: number;
}

/** A command run inside a job (`berth exec`), as a factory runs it. */
export interface ExecSession {
  /** Bytes for its stdin; null closes it. */
  write(data: Buffer | null): void;
  /** Its terminal changed size (a session with one). */
  resize(size: TerminalSize): void;
  /** Holds its output back (its client is behind: the command waits on a full pipe), or lets it go. */
  flow(paused: boolean): void;
  /** Ends it (SIGKILL to its process group). */
  kill(): void;
  /** Its output as it comes, then how it ended (once; `message` when it never ran). */
  on(listener: ExecListener): void;
}

export type ExecListener = (
  e:
    | { type: 'output'; stream: 'stdout' | 'stderr'; data: Buffer }
    | { type: 'exit'; exitCode: number | null; signal: string | null; message?: string },
) => void;

/** A WebSocket as a remote agent's channel is used (the API adapts ws's: api/routes/agent-channel.ts). */
export interface ChannelSocket {
  /** Sends a frame: a Buffer as a binary one, a string as text. */
  send(frame: Buffer | string): void;
  close(code: number, reason: string): void;
  onMessage(listener: (data: Buffer, binary: boolean) => void): void;
  onClose(listener: () => void): void;
}

/** Sessions in jobs over their remote agents' channels (agent-channels.ts). */
export interface RemoteSessions {
  /** Takes member `rank` of worker `workerId`'s channel, replacing an older one. */
  connect(workerId: number, rank: number, socket: ChannelSocket): void;
  /** Why a session in member `rank` of worker `workerId` cannot start now; undefined if it can. */
  refusal(workerId: number, rank: number): string | undefined;
  exec(jobId: number, workerId: number, rank: number, run: ExecRun): ExecSession;
}
