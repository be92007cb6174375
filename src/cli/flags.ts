/**
 * Option parsers shared by commands. They throw commander's InvalidArgumentError, so a bad value
 * is reported like any other usage error: one line, exit code 2.
 */
import { InvalidArgumentError } from 'commander';
import { BerthError } from '../domain/errors.js';
import { JOB_STATES, type JobState } from '../domain/job.js';
import { checkName, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import { checkPriorityClassName } from '../domain/priority-class.js';
import { parseAmount } from '../domain/quantity.js';
import { MAX_RETRIES, MAX_RETRY_DELAY_SECONDS } from '../domain/retry.js';
import { parseDuration } from './duration.js';

const rethrow = (err: unknown): never => {
  if (err instanceof BerthError) throw new InvalidArgumentError(err.message);
  throw err;
};

/**
 * `cpu=8,memory=32Gi,jobs=10` → `{cpu: "8", memory: "32Gi", jobs: "10"}`, each quantity checked.
 * Repeating the flag adds to the map; an empty value gives an empty map.
 */
export function quantityList(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  const out: Record<string, string> = { ...previous };
  for (const item of value.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    const eq = item.indexOf('=');
    if (eq <= 0) throw new InvalidArgumentError(`expected RESOURCE=QUANTITY, got "${item}"`);
    const resource = item.slice(0, eq).trim();
    const quantity = item.slice(eq + 1).trim();
    try {
      checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, 'resource', resource);
      parseAmount(resource, quantity, resource);
    } catch (err) {
      rethrow(err);
    }
    // Own keys only: `in` would find what every object has (hasOwnProperty, …; issue #40).
    if (Object.hasOwn(out, resource)) throw new InvalidArgumentError(`${resource} is given twice`);
    out[resource] = quantity;
  }
  return out;
}

/** A repeatable flag; each value may also be a comma-separated list (`--tag a --tag b,c`). */
export function repeatable(value: string, previous: string[] | undefined): string[] {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InvalidArgumentError('must not be empty');
  return [...(previous ?? []), ...items];
}

/** A whole number, possibly negative (`--priority -5`). */
export function integer(value: string): number {
  const n = Number(value);
  if (!/^\s*-?\d+\s*$/.test(value) || !Number.isSafeInteger(n)) {
    throw new InvalidArgumentError('must be a whole number');
  }
  return n;
}

/** `--priority 1000`, `--priority -5`, or the name of a priority class (`--priority high`). */
export function priority(value: string): number | string {
  if (/^\s*-?\d+\s*$/.test(value)) return integer(value);
  try {
    return checkPriorityClassName(value.trim());
  } catch (err) {
    return rethrow(err);
  }
}

/** A number greater than 0 (`--weight 2`, `--weight 0.5`). */
export function positiveNumber(value: string): number {
  const n = /^\s*(\d+\.?\d*|\.\d+)\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number greater than 0');
  return n;
}

/** A whole number of at least 0 (`--offset 0`). */
export function nonNegativeInteger(value: string): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a whole number of at least 0');
  return n;
}

/** A whole number of at least 1 (`--limit 20`). */
export function positiveInteger(value: string): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a whole number of at least 1');
  return n;
}

/**
 * A limit: a whole number of at least 1, or `none` (kept as the word: commander stores a parser's
 * null as an empty string). `limitValue` turns it into what the API takes.
 */
export function limitOrNone(value: string): number | 'none' {
  if (/^\s*none\s*$/i.test(value)) return 'none';
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new InvalidArgumentError('must be a whole number of at least 1, or none');
  return n;
}

/** A whole number (negative too, as priorities are), or `none`. */
export function integerOrNone(value: string): number | 'none' {
  return /^\s*none\s*$/i.test(value) ? 'none' : integer(value);
}

/** A `limitOrNone` flag's value for the API: the number, or null for none. */
export const limitValue = (v: number | 'none'): number | null => (v === 'none' ? null : v);

/** A job id: a positive integer, as `berth jobs` lists them. */
export function jobId(value: string): number {
  const n = /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new InvalidArgumentError('a job id is a positive integer (see: berth jobs)');
  }
  return n;
}

/** A job by its id, or a task of an array as Slurm names it: `123_7` (task 7 of array 123). */
export type JobRef = number | { arrayId: number; index: number };

export function jobRef(value: string): JobRef {
  const m = /^\s*(\d+)_(\d+)\s*$/.exec(value);
  if (!m) return jobId(value);
  const arrayId = Number(m[1]);
  if (arrayId < 1) throw new InvalidArgumentError('an array id is a positive integer (see: berth jobs)');
  return { arrayId, index: Number(m[2]) };
}

/** Repeatable job references (`berth cancel 12 123_7`). */
export const jobRefs = (value: string, previous: JobRef[] | undefined): JobRef[] => [
  ...(previous ?? []),
  jobRef(value),
];

/** Repeatable job ids, each value possibly a comma-separated list (`--after 3 --after 4,5`). */
export const jobIds = (value: string, previous: number[] | undefined): number[] =>
  repeatable(value, undefined).reduce((ids, v) => [...ids, jobId(v)], previous ?? []);

/** `--env K=V`, repeatable, into a map; `--env K` alone passes on K from this environment. */
export function envEntry(
  value: string,
  previous: Record<string, string> | undefined,
): Record<string, string> {
  const eq = value.indexOf('=');
  const name = eq < 0 ? value : value.slice(0, eq);
  if (name === '') throw new InvalidArgumentError('expected NAME=VALUE');
  const own = process.env[name];
  if (eq < 0 && own === undefined) {
    throw new InvalidArgumentError(`${name} is not set here; give NAME=VALUE`);
  }
  return { ...previous, [name]: eq < 0 ? (own ?? '') : value.slice(eq + 1) };
}

/** The longest timeout the API accepts: one year. */
const MAX_TIMEOUT_SECONDS = 31_536_000;

/** `90`, `90s`, `10m`, `1h30m`, `2d` → seconds (at least 1). */
export function timeoutSeconds(value: string): number {
  const seconds = parseDuration(value);
  if (seconds === undefined) {
    throw new InvalidArgumentError('expected a duration such as 90 (seconds), 90s, 10m, 1h or 1h30m');
  }
  if (seconds < 1) throw new InvalidArgumentError('must be at least 1s');
  if (seconds > MAX_TIMEOUT_SECONDS) throw new InvalidArgumentError('must be at most 365d');
  return seconds;
}

/** A retry's backoff: a duration (`30s`, `2m`; 0 for none) → seconds, at most an hour. */
export function backoffSeconds(value: string): number {
  const seconds = parseDuration(value);
  if (seconds === undefined)
    throw new InvalidArgumentError('expected a duration such as 10 (seconds), 30s or 2m');
  if (seconds > MAX_RETRY_DELAY_SECONDS) throw new InvalidArgumentError('must be at most 1h');
  return seconds;
}

/** A whole number of retries, 0 to MAX_RETRIES. */
export function retryCount(value: string): number {
  const n = nonNegativeInteger(value);
  if (n > MAX_RETRIES) throw new InvalidArgumentError(`must be at most ${MAX_RETRIES}`);
  return n;
}

/** `--state running,queued`, repeatable → the states, each checked. */
export function jobStates(value: string, previous: JobState[] | undefined): JobState[] {
  const states = repeatable(value, undefined).map((s) => {
    if (!(JOB_STATES as readonly string[]).includes(s)) {
      throw new InvalidArgumentError(`"${s}" is not a job state (${JOB_STATES.join(', ')})`);
    }
    return s as JobState;
  });
  return [...(previous ?? []), ...states];
}

/** A repeatable flag taken whole, commas and all (`--artifact 'out/{a,b}.csv'`). */
export function each(value: string, previous: string[] | undefined): string[] {
  if (value.trim() === '') throw new InvalidArgumentError('must not be empty');
  return [...(previous ?? []), value];
}
