/**
 * What a slurm factory knows of each of its workers between squeue calls, and what one squeue
 * answer says about a worker (`judge`): pure, so that the rules of the poll — when a worker is
 * gone, when Slurm only keeps it pending, when an answer cannot speak of it yet — are tested as a
 * table, apart from Slurm.
 */
import type { DirectRun } from './direct-run.js';
import { isEndedState, type SlurmJob } from './squeue-format.js';

export interface Tracked {
  name: string;
  slurmId: string | undefined;
  /** A direct worker's run (sharedDir): the server plays its agent. */
  run?: DirectRun;
  /**
   * How a direct worker's run ended (undefined: it has not), which says what its destroy must do:
   * - `exit-file`: its exit file was written; Slurm is ending its job (the script's last line):
   *   destroy waits for that, no scancel;
   * - `slurm`: squeue said its job ended, or listed it and then no more: nothing of it runs;
   * - `unseen`: squeue never listed it within the grace after its sbatch: whatever Slurm may still
   *   have of it is cancelled.
   */
  ended?: 'exit-file' | 'slurm' | 'unseen';
  /** When its sbatch started: its time limit cannot end earlier than this plus the limit. */
  submittedAt: number;
  /**
   * When its Slurm id became known (sbatch returned). A squeue that started earlier may not list
   * it yet, so such a poll says nothing of it; the grace for a missing job runs from here.
   */
  knownAt: number;
  /** Some squeue answer has listed it. */
  seen: boolean;
  /** The pending reason last reported (null: not pending). */
  waiting: string | null;
  /** When its time limit ends, as squeue last said while it ran (null: no limit). */
  endsAt?: number | null;
}

/** A worker about to be submitted as `name`. */
export function submitting(name: string, now = Date.now()): Tracked {
  return { name, slurmId: undefined, submittedAt: now, knownAt: now, seen: false, waiting: null };
}

/** A worker a previous server made, found as Slurm job `slurmId` (`job`: as squeue lists it). */
export function takenOver(name: string, slurmId: string, job?: SlurmJob, now = Date.now()): Tracked {
  return {
    name,
    slurmId,
    submittedAt: now,
    knownAt: 0,
    seen: true,
    waiting: null,
    ...(job?.state === 'RUNNING' ? { endsAt: endOf(job, now) } : {}),
  };
}

/** When a running Slurm job's time limit ends (null: it has none). */
export function endOf(j: SlurmJob, now = Date.now()): number | null {
  return j.timeLeftSeconds === null ? null : now + j.timeLeftSeconds * 1000;
}

/** What one squeue answer says about a tracked worker. */
export type Verdict =
  /** Nothing: still being submitted, already over, or submitted while the squeue ran. */
  | { kind: 'unknown' }
  /**
   * Its Slurm job ended, or is gone from squeue. `lost`: the reason for a worker whose agent
   * did not report; `state` and `how`: a direct run's end (Tracked.ended).
   */
  | { kind: 'gone'; lost: string; state: string; host: string; how: 'slurm' | 'unseen' }
  /** It lives: `running` (or completing) on `host`, or pending for `waiting`. */
  | { kind: 'live'; running: boolean; host: string; waiting: string | null; endsAt?: number | null };

/**
 * Judges worker `t` by `j`, its job in a squeue answer asked at `asked` (undefined: not listed).
 * A job never listed is gone `graceMs` after its sbatch returned; one listed before, at once.
 */
export function judge(t: Tracked, j: SlurmJob | undefined, asked: number, graceMs: number): Verdict {
  if (t.slurmId === undefined || t.ended || t.knownAt > asked) return { kind: 'unknown' };
  const seen = t.seen || j !== undefined;
  if (j && !isEndedState(j.state)) {
    return {
      kind: 'live',
      running: j.state === 'RUNNING' || j.state === 'COMPLETING',
      host: j.nodes[0] ?? '',
      waiting: j.state === 'PENDING' ? j.reason || 'pending' : null,
      ...(j.state === 'RUNNING' ? { endsAt: endOf(j, asked) } : {}),
    };
  }
  if (j) {
    const reason = j.reason && j.reason !== 'None' ? ` (${j.reason})` : '';
    return {
      kind: 'gone',
      lost: `ended ${j.state}${reason}`,
      state: j.state,
      host: j.nodes[0] ?? '',
      how: 'slurm',
    };
  }
  if (seen) return { kind: 'gone', lost: 'is gone', state: 'and left squeue', host: '', how: 'slurm' };
  if (asked - t.knownAt <= graceMs) return { kind: 'live', running: false, host: '', waiting: t.waiting };
  const state = `unseen by squeue ${graceMs / 1000} s after sbatch`;
  return { kind: 'gone', lost: `is gone (${state})`, state, host: '', how: 'unseen' };
}
