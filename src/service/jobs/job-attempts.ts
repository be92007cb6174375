/**
 * A job's attempts — every ended one (evicted and requeued, or failed and retried) from the store,
 * and the current or last one from the job itself — and its output: all of it, one attempt's, or
 * followed live.
 */
import type { Readable } from 'node:stream';
import { BadRequestError } from '../../domain/errors.js';
import { isTerminal, type JobAttempt, type JobRecord } from '../../domain/job.js';
import type { Principal } from '../../domain/user.js';
import type { LogRange } from '../../store/log-store.js';
import { listAttempts, type AttemptRecord } from '../../store/queries/attempts.js';
import { isoOrNull } from '../../store/queries/time.js';
import { type ServiceContext, type With } from '../context.js';
import { visibleJob } from './jobs.js';

export async function jobAttempts(ctx: ServiceContext, p: Principal, id: number): Promise<JobAttempt[]> {
  const job = await visibleJob(ctx, p, id);
  return attemptsOf(job, await listAttempts(ctx.store.db, id));
}

function attemptsOf(job: JobRecord, ended: AttemptRecord[]): JobAttempt[] {
  const views: JobAttempt[] = ended.map((a) => ({
    attempt: a.attempt,
    outcome: a.outcome,
    reason: a.reason,
    exitCode: a.exitCode,
    charged: a.charged,
    startedAt: isoOrNull(a.startedAt),
    endedAt: isoOrNull(a.endedAt),
  }));
  const done = isTerminal(job.state);
  views.push({
    attempt: job.attempts + 1,
    outcome: job.state,
    reason: job.reason,
    exitCode: job.exitCode,
    charged: job.state === 'failed' ? 'job' : null,
    startedAt: isoOrNull(job.startedAt),
    endedAt: done ? isoOrNull(job.finishedAt) : null,
  });
  return views;
}

/**
 * Where attempt `attempt` of job `id` wrote in its log: from the previous attempt's end to its
 * own (the current attempt's runs to the end). 400 for an attempt the job has not had.
 */
export async function attemptLogRange(
  ctx: ServiceContext,
  job: JobRecord,
  attempt: number,
): Promise<LogRange> {
  const last = job.attempts + 1;
  if (attempt < 1 || attempt > last)
    throw new BadRequestError(
      `attempt ${attempt}: job ${job.id} has ${last === 1 ? 'had one attempt (1)' : `had attempts 1 to ${last}`}`,
    );
  const ended = await listAttempts(ctx.store.db, job.id);
  const endOf = (k: number) => ended.find((a) => a.attempt === k)?.logEnd ?? null;
  return {
    after: attempt === 1 ? 0 : (endOf(attempt - 1) ?? 0),
    upTo: attempt === last ? null : endOf(attempt),
  };
}

/** A job's output: all of it, one attempt's (`attempt`), or followed live until the job ends. */
export async function jobLogs(
  ctx: With<'runtime'>,
  p: Principal,
  id: number,
  follow: boolean,
  attempt?: number,
): Promise<Readable> {
  const job = await visibleJob(ctx, p, id);
  const rt = ctx.runtime;
  if (attempt !== undefined) {
    if (follow) throw new BadRequestError('attempt: give either attempt or follow, not both');
    return rt.logs.read(id, await attemptLogRange(ctx, job, attempt));
  }
  if (!follow) return rt.logs.read(id);
  return rt.logs.follow(id, () => !rt.controller.isActive(id));
}
