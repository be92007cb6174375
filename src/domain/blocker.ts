/** What keeps a pending job from being admitted; computed by the scheduler, shown to users. */
import type { StopPolicy } from './cluster-queue.js';

export type Blocker =
  | {
      kind: 'quota';
      queue: string;
      resource: string;
      requested: number;
      available: number;
      used: number;
      limit: number;
    }
  | { kind: 'cohort'; cohort: string; resource: string; requested: number; available: number }
  | { kind: 'hold'; queue: string; stopPolicy: StopPolicy }
  | { kind: 'queue-missing'; queue: string }
  | { kind: 'ahead'; queue: string; jobsAhead: number }
  | { kind: 'preemption'; victims: number[] }
  /** Its project lost a privilege the job needs (revoked while the job was queued). */
  | { kind: 'privilege'; project: string; privilege: string }
  /**
   * Backfill: the reservation it holds (`job` is its own id) or would delay (another job's): when
   * that job is reserved to start, and what of the queue it asks for (quantities as text).
   */
  | { kind: 'reservation'; queue: string; job: number; startAt: string; requests: Record<string, string> }
  /** Admitted, its worker waits to start in the system that runs it (Slurm's pending reason). */
  | { kind: 'worker'; worker: number; reason: string };
