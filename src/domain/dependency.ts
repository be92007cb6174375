/**
 * A job's dependencies, as Slurm's `--dependency` has them: run after another job of the project
 * has succeeded (`afterok`, berth's `dependsOn`), has ended in any way (`afterany`), or has failed
 * or been cancelled (`afternotok`). Pure: whether an ended job meets one, and why not.
 */
import type { JobSpec, JobState } from './job.js';

/** What the job waits for of the other: its success, its end, or its failure. */
export type DependencyCondition = 'success' | 'end' | 'failure';

export interface Dependency {
  job: number;
  on: DependencyCondition;
}

/** A spec's dependencies, each job once (a stricter condition is not merged: all must hold). */
export function dependenciesOf(spec: JobSpec): Dependency[] {
  return [
    ...spec.dependsOn.map((job) => ({ job, on: 'success' as const })),
    ...(spec.dependsOnAny ?? []).map((job) => ({ job, on: 'end' as const })),
    ...(spec.dependsOnFailed ?? []).map((job) => ({ job, on: 'failure' as const })),
  ];
}

/** Whether a dependency ended in `state` lets the job go on. */
export function dependencyMet(on: DependencyCondition, state: JobState): boolean {
  switch (on) {
    case 'success':
      return state === 'succeeded';
    case 'end':
      return true;
    case 'failure':
      return state === 'failed' || state === 'cancelled';
  }
}

/** "to succeed", "to end", "to fail": what a waiting job waits for. */
export const awaited = (on: DependencyCondition): string =>
  on === 'success' ? 'to succeed' : on === 'end' ? 'to end' : 'to fail';

/** Why a job is cancelled for a dependency that ended otherwise, or never existed. */
export function unmetReason(d: Dependency, state: JobState | undefined): string {
  if (state === undefined) return `dependency job ${d.job} does not exist`;
  return d.on === 'success'
    ? `dependency job ${d.job} ${state}`
    : `dependency job ${d.job} ${state}, and this job was to run only if it failed`;
}
