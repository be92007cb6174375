/**
 * What a restarted server takes over of the Slurm jobs its factory's earlier servers left (pure;
 * the factory does the scancels and starts following the workers it keeps):
 * - a live Slurm job whose worker the store still holds: adopted by its name, its agent (or, for
 *   a direct worker, its run) goes on;
 * - a direct worker whose Slurm job ended while no server ran, leaving its exit status: adopted
 *   too, so that its end is reported;
 * - every other live job of this factory (its worker destroyed, or never recorded): an orphan, to
 *   cancel, so that no Slurm job is ever leaked.
 */
import type { LeftWorker } from '../factory.js';
import type { SlurmJob } from './squeue-format.js';
import type { WorkerNames } from './worker-names.js';

export interface TakenOver {
  workerId: number;
  name: string;
  slurmId: string;
  /** Its job as squeue lists it; absent for a direct worker whose job has ended. */
  job?: SlurmJob;
  /** A direct worker's berth job (its handle's `jobId`): the server plays its agent. */
  jobId?: number;
}

export interface TakeOverPlan {
  adopt: TakenOver[];
  orphans: SlurmJob[];
}

/**
 * `live`: this factory's Slurm jobs that have not ended; `left`: the workers the store holds.
 * `exitLeft(name)` says whether a direct worker's job left its exit status (only for a factory of
 * direct workers).
 */
export function planTakeOver(
  live: SlurmJob[],
  left: LeftWorker[],
  names: WorkerNames,
  exitLeft?: (name: string) => boolean,
): TakeOverPlan {
  const wanted = new Map(left.map((w) => [w.workerId, w.handle]));
  const adopted = new Set<number>();
  const plan: TakeOverPlan = { adopt: [], orphans: [] };
  const directJob = (workerId: number) => {
    const jobId = wanted.get(workerId)?.jobId;
    return exitLeft && typeof jobId === 'number' ? { jobId } : {};
  };
  for (const j of live) {
    const workerId = names.workerOf(j.name);
    if (workerId === undefined || !wanted.has(workerId) || adopted.has(workerId)) {
      plan.orphans.push(j);
      continue;
    }
    adopted.add(workerId);
    plan.adopt.push({ workerId, name: j.name, slurmId: j.id, job: j, ...directJob(workerId) });
  }
  if (!exitLeft) return plan;
  for (const { workerId, handle } of left) {
    const { slurmJobId: slurmId, slurmJobName: name } = handle ?? {};
    if (adopted.has(workerId) || typeof slurmId !== 'string' || typeof name !== 'string') continue;
    const direct = directJob(workerId);
    if (direct.jobId !== undefined && exitLeft(name)) plan.adopt.push({ workerId, name, slurmId, ...direct });
  }
  return plan;
}
