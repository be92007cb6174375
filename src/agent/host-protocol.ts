/** Messages between the server's local factory and its agent host child process (Node IPC). */
import type { JobCgroup } from './cgroups.js';
import type { FinishRequest } from './protocol.js';

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
    }
  /** Kills every member of the worker. */
  | { type: 'kill'; workerId: number };

export type HostEvent =
  | { type: 'ready' }
  | { type: 'spawned'; workerId: number; rank: number; pid: number }
  /** The member's process group is gone (before its output and outcome reach the server). */
  | { type: 'exited'; workerId: number; rank: number }
  | { type: 'finished'; workerId: number; rank: number; result: FinishRequest }
  | { type: 'failed'; workerId: number; rank: number; message: string }
  | { type: 'killed'; workerId: number };
