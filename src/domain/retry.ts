/**
 * Retries: a failed job runs again while its budget lasts, after an exponential backoff with
 * jitter. Two budgets, as a batch user expects: the job's own failures (a non-zero exit, its
 * timeout) and the infrastructure's (its worker lost, its node failed, the server restarted
 * under it, a resource or worker that could not be made). An eviction (preemption, drain) is
 * charged to neither: the job did nothing wrong. Pure: the policy, the charge and the delay.
 */
import { formatSpan } from './duration.js';
import { BadRequestError } from './errors.js';
import type { JobSpec } from './job.js';

/** Whose fault a failed attempt was: the job's own, or the infrastructure's. */
export type FailureKind = 'job' | 'infrastructure';

/** What an ended attempt was charged to: a failure kind, or nothing (an eviction). */
export type AttemptCharge = FailureKind | 'none';

/** The most retries of either kind a job may ask for. */
export const MAX_RETRIES = 100;
/** The first retry's delay when the job does not say (Kubernetes' backoffLimit waits 10 s too). */
export const DEFAULT_RETRY_BACKOFF_SECONDS = 10;
/** No retry waits longer than this, however many came before it. */
export const MAX_RETRY_DELAY_SECONDS = 3600;

export interface RetryPolicy {
  /** Retries after the job's own failures. */
  retries: number;
  /** Retries after the infrastructure's failures. */
  infraRetries: number;
  /** The first retry's delay; each later one doubles it, up to MAX_RETRY_DELAY_SECONDS. */
  backoffSeconds: number;
}

export function retryPolicy(spec: JobSpec): RetryPolicy {
  return {
    retries: spec.retries ?? 0,
    infraRetries: spec.infraRetries ?? 0,
    backoffSeconds: spec.retryBackoffSeconds ?? DEFAULT_RETRY_BACKOFF_SECONDS,
  };
}

/** The retries a job has used so far, per budget. */
export interface RetriesUsed {
  job: number;
  infrastructure: number;
}

/** The budget `kind` draws on. */
export const budgetOf = (p: RetryPolicy, kind: FailureKind): number =>
  kind === 'job' ? p.retries : p.infraRetries;

/** Whether a failure of `kind` may be retried. */
export const mayRetry = (p: RetryPolicy, used: RetriesUsed, kind: FailureKind): boolean =>
  used[kind] < budgetOf(p, kind);

/**
 * The wait before retry number `n` (1-based, counting both kinds), in ms: the backoff doubled
 * n − 1 times and capped, then "equal jitter" — half of it fixed, the other half random — so that
 * jobs that failed together (a node went down under all of them) do not come back together, yet
 * none comes back much sooner than its backoff says.
 */
export function retryDelayMs(backoffSeconds: number, n: number, random: () => number = Math.random): number {
  const full = Math.min(MAX_RETRY_DELAY_SECONDS, backoffSeconds * 2 ** Math.max(0, n - 1)) * 1000;
  return Math.round(full / 2 + random() * (full / 2));
}

/** "retry 1 of 3 (the job's own failures)": which retry of which budget. */
export function describeRetry(p: RetryPolicy, used: RetriesUsed, kind: FailureKind): string {
  const budget = kind === 'job' ? "the job's own failures" : "the infrastructure's failures";
  return `retry ${used[kind] + 1} of ${budgetOf(p, kind)} for ${budget}`;
}

/** "attempt 1 failed: …; retry 1 of 3 … in 8s": a job waiting out its backoff, `ms` before it returns. */
export const retryingReason = (head: string, ms: number): string =>
  // Rounded up: a wait of 0.7 s is "in 1s", not "in 0s".
  `${head} in ${formatSpan(Math.ceil(ms / 1000) * 1000, 2)}`;

/** The first part of a reason `retryingReason` made (a restored job's, whose wait has moved on). */
export const retryHead = (reason: string): string => reason.replace(/ in \w+$/, '');

/**
 * The retry fields of a spec from a submission's, checked (the API's schema checks them too; the
 * service is also called directly). Kept only when given, so a spec without them stays as it was.
 */
export function retrySpec(input: {
  retries?: number;
  infraRetries?: number;
  retryBackoffSeconds?: number;
}): Pick<JobSpec, 'retries' | 'infraRetries' | 'retryBackoffSeconds'> {
  const count = (field: string, n: number | undefined): number | undefined => {
    if (n !== undefined && (!Number.isSafeInteger(n) || n < 0 || n > MAX_RETRIES))
      throw new BadRequestError(`${field}: ${n} is not a whole number from 0 to ${MAX_RETRIES}`);
    return n || undefined;
  };
  const retries = count('retries', input.retries);
  const infraRetries = count('infraRetries', input.infraRetries);
  const backoff = input.retryBackoffSeconds;
  if (backoff !== undefined && !(backoff >= 0 && backoff <= MAX_RETRY_DELAY_SECONDS))
    throw new BadRequestError(`retryBackoffSeconds: ${backoff} is not from 0 to ${MAX_RETRY_DELAY_SECONDS}`);
  return {
    ...(retries ? { retries } : {}),
    ...(infraRetries ? { infraRetries } : {}),
    ...(backoff !== undefined ? { retryBackoffSeconds: backoff } : {}),
  };
}
