/** Messages between the server's local factory and its agent host child process (Node IPC). */
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
  | { type: 'kill'; workerId: number };

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
  | { type: 'killed'; workerId: number; clean: boolean };
