/** The ended attempts of jobs that ran more than once (migration 0014). */
import type { AttemptCharge } from '../../domain/retry.js';
import type { Db } from '../store.js';

export interface AttemptRecord {
  jobId: number;
  attempt: number;
  outcome: 'requeued' | 'retried';
  charged: AttemptCharge;
  reason: string;
  exitCode: number | null;
  startedAt: number | null;
  endedAt: number;
  /** Where its output ends in the job's log (LogStore.mark). */
  logEnd: number;
}

export async function insertAttempt(db: Db, a: AttemptRecord): Promise<void> {
  await db
    .insertInto('job_attempts')
    .values({
      job_id: a.jobId,
      attempt: a.attempt,
      outcome: a.outcome,
      charged: a.charged,
      reason: a.reason,
      exit_code: a.exitCode,
      started_at: a.startedAt,
      ended_at: a.endedAt,
      log_end: a.logEnd,
    })
    .execute();
}

/** A job's ended attempts, first to last (none for a job that ran once). */
export async function listAttempts(db: Db, jobId: number): Promise<AttemptRecord[]> {
  const rows = await db
    .selectFrom('job_attempts')
    .selectAll()
    .where('job_id', '=', jobId)
    .orderBy('attempt')
    .execute();
  return rows.map((r) => ({
    jobId: Number(r.job_id),
    attempt: r.attempt,
    outcome: r.outcome as AttemptRecord['outcome'],
    charged: r.charged as AttemptCharge,
    reason: r.reason,
    exitCode: r.exit_code,
    startedAt: r.started_at === null ? null : Number(r.started_at),
    endedAt: Number(r.ended_at),
    logEnd: Number(r.log_end),
  }));
}
