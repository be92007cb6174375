/**
 * How a job array's rows are written (domain/job-array.ts): every task in one unit — the first as
 * any job, with the array's one `submitted` event and audit row, the rest in bulk. The rest of
 * its submission is any job's (submission.ts). 100,000 tasks go in about a second
 * (`npm run bench -- arrays`).
 */
import { parseArraySpec } from '../../domain/job-array.js';
import type { JobRecord } from '../../domain/job.js';
import { insertAudit, type AuditRecord } from '../../store/queries/audit.js';
import { appendEvent } from '../../store/queries/events.js';
import { insertArrayTasks } from '../../store/queries/job-arrays.js';
import type { NewJob } from '../../store/queries/jobs.js';
import type { Db } from '../../store/store.js';
import type { ServiceContext } from '../context.js';
import type { Announce } from '../live/notices.js';

export interface ArrayRows {
  /** The tasks' common row; its spec holds the array (`spec.array`). */
  job: NewJob;
  audit: Omit<AuditRecord, 'subject' | 'at'>;
  /** What the `submitted` event adds to its message (the timeout given by the target), or ''. */
  note: string;
  /** One unit on the submissions' write path, announcing what it gave once committed. */
  write: <T>(fn: (db: Db, announce: Announce) => Promise<T>) => Promise<T>;
}

/** How many tasks the array has. */
export const taskCount = (job: NewJob): number => parseArraySpec(job.spec.array!).indices.length;

/** Writes the tasks; their records, or undefined when the array's idempotency key was used before. */
export function writeArray(ctx: ServiceContext, s: ArrayRows): Promise<JobRecord[] | undefined> {
  const { indices } = parseArraySpec(s.job.spec.array!);
  return s.write(async (db, announce) => {
    const now = ctx.now();
    const records = await insertArrayTasks(db, s.job, indices, now);
    if (!records) return undefined;
    const head = records[0]!;
    const message = `array of ${indices.length.toLocaleString('en')} tasks (${s.job.spec.array}) submitted by ${s.job.createdBy} to cluster queue ${s.job.clusterQueue}${s.note}`;
    await appendEvent(
      db,
      {
        subjectKind: 'job',
        subject: String(head.id),
        project: s.job.project,
        jobId: head.id,
        type: 'submitted',
        message,
      },
      now,
    );
    await insertAudit(db, [
      { ...s.audit, subject: String(head.id), at: now, detail: { ...s.audit.detail, tasks: indices.length } },
    ]);
    announce({ kind: 'array-submitted', records });
    return records;
  });
}
