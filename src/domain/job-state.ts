/**
 * A job's states: a leaf that the job and its array both read (job.ts re-exports it), so that
 * neither imports the other.
 */
export const JOB_STATES = ['queued', 'admitted', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'cancelled']);
export const isTerminal = (s: JobState): boolean => TERMINAL_STATES.has(s);
