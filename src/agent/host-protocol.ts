/**
 * Messages between the server's local factory and its agent host child process (Node IPC, its
 * `advanced` serialization: bytes travel as bytes, not as JSON).
 */
import type { JobCgroup } from './cgroups.js';
import type { JobIdentity } from './identity.js';
import type { FinishRequest } from './protocol.js';
import type { JobImage, SandboxSpec } from './sandbox.js';

export type HostCommand =
  | {
      type: 'start';
      workerId: number;
      /** Which member of the worker's gang this agent runs (0 for a one-worker job). */
      rank: number;
      url: string;
      token: string;
      workdir: string;
      /** The cgroups made for the job, which it joins before its command runs. */
      cgroup?: JobCgroup;
      /** The uid and gid the member runs under (agent/identity.ts); absent: the host's own. */
      identity?: JobIdentity;
      /** More variables for the job: the devices it was given (CUDA_VISIBLE_DEVICES, …). */
      env?: Record<string, string>;
      /** Its namespaces (sandbox.ts); absent: the host's. */
      sandbox?: SandboxSpec;
      /** With a sandbox: the image it runs in, unpacked, and that image's config. */
      image?: JobImage;
    }
  /** Kills every member of the worker. */
  | { type: 'kill'; workerId: number }
  /** `berth exec`: runs `command` inside a running member (exec-process.ts), as session `session`. */
  | {
      type: 'exec';
      session: number;
      /**
       * The job it is for: a pilot's worker runs one job after another, and a session asked for a
       * job that has just ended must not land in the next one (another project's, perhaps).
       */
      jobId: number;
      workerId: number;
      rank: number;
      command: string[];
      /** A terminal of its own, this size (`berth exec -t`); absent: pipes. */
      tty?: { cols: number; rows: number };
      /** `berth port-forward`: a relay to this port in the job instead of `command`. */
      forward?: number;
      /**
       * `berth attach`: the interactive member's own terminal (job-terminal.ts), at this size,
       * instead of `command`; its kill lets go of the terminal, and the job runs on.
       */
      attach?: { cols: number; rows: number };
    }
  /** Stop reading a session's output (its client is behind), or read it again. */
  | { type: 'exec-flow'; session: number; paused: boolean }
  /** A session's terminal changed size. */
  | { type: 'exec-resize'; session: number; cols: number; rows: number }
  /** Bytes for a session's stdin; null closes it. */
  | { type: 'exec-input'; session: number; data: Uint8Array | null }
  /** Ends a session's command (SIGKILL to its process group). */
  | { type: 'exec-kill'; session: number };

export type HostEvent =
  | { type: 'ready' }
  | { type: 'spawned'; workerId: number; rank: number; pid: number }
  /**
   * The member's process group is gone (before its output and outcome reach the server); with an
   * identity, `clean` says whether every process of its uid is gone too.
   */
  | { type: 'exited'; workerId: number; rank: number; clean: boolean }
  | { type: 'finished'; workerId: number; rank: number; result: FinishRequest }
  | { type: 'failed'; workerId: number; rank: number; message: string }
  /** Every member is killed; `clean`: no process of their uids is left either. */
  | { type: 'killed'; workerId: number; clean: boolean }
  /** A session's output, as it comes. */
  | { type: 'exec-output'; session: number; stream: 'stdout' | 'stderr'; data: Uint8Array }
  /** A session's command ended (or never started: `message` says why). */
  | { type: 'exec-exit'; session: number; exitCode: number | null; signal: string | null; message?: string };

/** The commands about `berth exec` sessions: what a remote agent's channel carries too (channel-protocol.ts). */
export type SessionCommand = Extract<
  HostCommand,
  { type: 'exec' | 'exec-input' | 'exec-kill' | 'exec-resize' | 'exec-flow' }
>;
/** The events of `berth exec` sessions. */
export type SessionEvent = Extract<HostEvent, { type: 'exec-output' | 'exec-exit' }>;
