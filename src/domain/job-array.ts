/**
 * Job arrays, as Slurm's `--array`: one submission, one task per index, each a job of its own
 * (queued, run, retried, cancelled and logged as any job) that knows its array and index
 * (BERTH_ARRAY_ID, BERTH_ARRAY_INDEX). An array's id is the job id of its first task. `%K` caps
 * how many of its tasks are in play at once. Pure: parsing and describing the index set.
 */
import { BadRequestError } from './errors.js';
import type { JobState } from './job-state.js';

/** The most tasks one array may have (Slurm's MaxArraySize is 1001 by default). */
export const MAX_ARRAY_TASKS = 100_000;
/** The highest index a task may have. */
export const MAX_ARRAY_INDEX = 9_999_999;

export interface ArraySpec {
  /** The indices, ascending, each once. */
  indices: number[];
  /** How many tasks may be in play (queued for admission, admitted or running) at once; null: all. */
  throttle: number | null;
}

const PART = /^(\d+)(?:-(\d+)(?::(\d+))?)?$/;

/**
 * `0-999%50`, `1,3,5`, `0-15:4`, `1-3,10-20:5%2` → the indices and the throttle; a
 * BadRequestError naming the part that is wrong otherwise.
 */
export function parseArraySpec(text: string): ArraySpec {
  const bad = (why: string) => new BadRequestError(`array: ${JSON.stringify(text)}: ${why}`);
  const [list = '', limit, extra] = text.trim().split('%');
  if (extra !== undefined) throw bad('one %K at most, at the end');
  let throttle: number | null = null;
  if (limit !== undefined) {
    if (!/^\d+$/.test(limit) || Number(limit) < 1) throw bad('%K needs a whole number of at least 1');
    throttle = Number(limit);
  }
  const seen = new Set<number>();
  for (const part of list.split(',')) {
    const m = PART.exec(part.trim());
    if (!m) throw bad(`${JSON.stringify(part)} is not N, N-M or N-M:S`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    const step = m[3] === undefined ? 1 : Number(m[3]);
    if (to < from) throw bad(`${part}: the range ends before it starts`);
    if (step < 1) throw bad(`${part}: the step must be at least 1`);
    if (to > MAX_ARRAY_INDEX) throw bad(`indices go up to ${MAX_ARRAY_INDEX}`);
    const tooMany = bad(`an array has at most ${MAX_ARRAY_TASKS.toLocaleString('en')} tasks`);
    // Before the loop: a range of a billion must not be walked to be refused.
    if (Math.floor((to - from) / step) + 1 > MAX_ARRAY_TASKS) throw tooMany;
    for (let i = from; i <= to; i += step) seen.add(i);
    if (seen.size > MAX_ARRAY_TASKS) throw tooMany;
  }
  return { indices: [...seen].sort((a, b) => a - b), throttle };
}

/** `0-999`, `1,3,5-7`: indices as Slurm prints them (runs of consecutive ones as ranges). */
export function formatIndices(indices: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < indices.length;) {
    let j = i;
    while (j + 1 < indices.length && indices[j + 1] === indices[j]! + 1) j++;
    parts.push(j === i ? String(indices[i]) : `${indices[i]}-${indices[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** An array in a job list or `GET /arrays/{id}`: its definition and its tasks' counts by state. */
export interface ArraySummary {
  /** The job id of its first task. */
  id: number;
  /** Its indices and throttle as submitted (`0-999%50`). */
  spec: string;
  /** How many tasks it has. */
  size: number;
  throttle: number | null;
  /** Its tasks by state (every state present, 0 when none). */
  counts: Record<JobState, number>;
  /** The array's own state: running while any task is unfinished; else failed if any task failed, cancelled if any was, succeeded. */
  state: JobState;
}

/** An array's state from its tasks' counts. */
export function arrayState(counts: Record<JobState, number>): JobState {
  if (counts.running > 0) return 'running';
  if (counts.admitted > 0) return 'admitted';
  if (counts.queued > 0) return 'queued';
  if (counts.failed > 0) return 'failed';
  if (counts.cancelled > 0) return 'cancelled';
  return 'succeeded';
}

/** `123_7`: how Slurm (and berth's CLI) names task 7 of array 123. */
export const TASK_REF = /^(\d+)_(\d+)$/;

/**
 * The array fields of a spec from a submission's `array` (absent: none): the indices and throttle
 * as Slurm would print them back, and the throttle on its own for the controller.
 */
export function arraySpecOf(text: string | undefined): { array?: string; arrayThrottle?: number } {
  if (text === undefined) return {};
  const { indices, throttle } = parseArraySpec(text);
  const array = formatIndices(indices) + (throttle === null ? '' : `%${throttle}`);
  return throttle === null ? { array } : { array, arrayThrottle: throttle };
}
