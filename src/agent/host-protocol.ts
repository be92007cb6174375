/** Messages between the server's local factory and its agent host child process (Node IPC). */
import type { JobCgroup } from './cgroups.js';
import type { FinishRequest } from './protocol.js';

export type HostCommand =
  | {
      type: 'start';
      workerId: number;
      url: string;
      token: string;
      workdir: string;
      /** The cgroups made for the job, which it joins before its command runs. */
      cgroup?: JobCgroup;
    }
  | { type: 'kill'; workerId: number };

export type HostEvent =
  | { type: 'ready' }
  | { type: 'spawned'; workerId: number; pid: number }
  | { type: 'finished'; workerId: number; result: FinishRequest }
  | { type: 'failed'; workerId: number; message: string }
  | { type: 'killed'; workerId: number };
