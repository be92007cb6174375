/**
 * Watching a job from the command line: waiting until it finishes, copying its log as it is
 * written, and turning its outcome into an exit code.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isTerminal } from '../domain/job.js';
import type { ArraySummary } from '../domain/job-array.js';
import type { Job } from './api-types.js';
import type { JobRef } from './flags.js';
import { apiPath, ConnectionError, type ApiClient } from './client.js';
import { CliError } from './errors.js';
import { reasonText } from './output.js';

/** Polling starts fast (short jobs) and slows down to once a second (long ones). */
const FIRST_POLL_MS = 100;
const MAX_POLL_MS = 1_000;
/** The shell's exit code for "interrupted by Ctrl-C". */
const EXIT_INTERRUPTED = 130;

export const jobPath = (id: number): string => apiPath`/jobs/${id}`;

/** `job 12 failed (exited with code 3)`. */
export const stateLine = (job: Job): string =>
  `job ${job.id} ${job.state} (${reasonText(job.reason, Date.now())})`;

/** How long a submission's answer waits for the scheduler's first look at its job. */
const FIRST_LOOK_MS = 2_000;
const FIRST_LOOK_POLL_MS = 25;

/**
 * `job` once the scheduler has weighed it (`provisional` false: its first pass, milliseconds after
 * the submission as a rule), so that what `berth submit` says is what `berth status` says next;
 * as it last was if that takes longer than FIRST_LOOK_MS (then its line says it is provisional).
 */
export async function afterFirstLook(client: ApiClient, job: Job): Promise<Job> {
  const deadline = Date.now() + FIRST_LOOK_MS;
  let seen = job;
  while (seen.provisional === true && !isTerminal(seen.state) && Date.now() < deadline) {
    await delay(FIRST_LOOK_POLL_MS);
    seen = await client.get<Job>(jobPath(seen.id));
  }
  return seen;
}

/**
 * The exit code that stands for a finished job: its own for a failure with one, 1 for a failure
 * without one (cancelled before it ran, timed out, could not start), 0 when it succeeded.
 */
export function exitCodeOf(job: Job): number {
  if (job.state === 'succeeded') return 0;
  const code = job.exitCode;
  return code !== null && code > 0 && code < 256 ? code : 1;
}

/** Polls the job until it has finished. */
export async function waitForJob(client: ApiClient, id: number): Promise<Job> {
  for (let interval = FIRST_POLL_MS; ; interval = Math.min(2 * interval, MAX_POLL_MS)) {
    const job = await client.get<Job>(jobPath(id));
    if (isTerminal(job.state)) return job;
    await delay(interval);
  }
}

/**
 * Refuses a job outside the project the command was given (`--project P`): job ids are the
 * installation's, so the flag names nothing to look in — it is a check that the job is where the
 * user believes it is. Without the flag, any job the caller may see.
 */
export function inProject(job: Pick<Job, 'id' | 'project'>, project: string | undefined): void {
  if (project !== undefined && job.project !== project)
    throw new CliError(`job ${job.id} is in project "${job.project}", not "${project}"`);
}

/** The job id a reference names: itself, or the task `123_7` names (asked of the server). */
export async function resolveJob(client: ApiClient, ref: JobRef): Promise<number> {
  if (typeof ref === 'number') return ref;
  return (await client.get<Job>(apiPath`/arrays/${ref.arrayId}/tasks/${ref.index}`)).id;
}

/** An array as `GET /arrays/{id}` shows it. */
export type ArrayStatus = ArraySummary & { job: Job };

/** Polls until none of the array's tasks is unfinished; returns how it ended. */
export async function waitForArray(client: ApiClient, id: number): Promise<ArrayStatus> {
  for (let interval = FIRST_POLL_MS; ; interval = Math.min(2 * interval, MAX_POLL_MS)) {
    const a = await client.get<ArrayStatus>(apiPath`/arrays/${id}`);
    if (isTerminal(a.state)) return a;
    await delay(interval);
  }
}

/** Resolves once `out` can take more, or can take nothing any more. */
function drained(out: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      for (const event of ['drain', 'close', 'error']) out.off(event, done);
      resolve();
    };
    for (const event of ['drain', 'close', 'error']) out.on(event, done);
  });
}

/**
 * Writes the job's log to `out` as the server sends it; with `follow`, until the job ends. Stops
 * quietly when the reader of `out` goes away (`berth logs -f 12 | head`): resolves false then.
 */
export async function copyLog(
  client: ApiClient,
  id: number,
  follow: boolean,
  out: NodeJS.WritableStream,
  attempt?: number,
): Promise<boolean> {
  let open = true;
  // Stays attached: later writes to a closed pipe must not end in an unhandled 'error' either.
  out.on('error', () => (open = false));
  const query = follow ? { follow: true } : attempt !== undefined ? { attempt } : {};
  for await (const chunk of client.chunks(`${jobPath(id)}/logs`, { query })) {
    if (!open) break;
    if (!out.write(chunk)) await drained(out);
  }
  return open;
}

/**
 * Runs `work`, which watches job `id`: Ctrl-C stops the watching, not the job, and says so; a
 * lost connection says that the job is not affected.
 */
export async function watching<T>(id: number, work: () => Promise<T>): Promise<T> {
  const interrupted = () => {
    process.stderr.write(`\nberth: stopped watching job ${id}; it goes on (berth cancel ${id} stops it)\n`);
    process.exit(EXIT_INTERRUPTED);
  };
  process.once('SIGINT', interrupted);
  try {
    return await work();
  } catch (err) {
    if (err instanceof ConnectionError) {
      throw new ConnectionError(`${err.message}; job ${id} is not affected (see: berth status ${id})`);
    }
    throw err;
  } finally {
    process.off('SIGINT', interrupted);
  }
}
