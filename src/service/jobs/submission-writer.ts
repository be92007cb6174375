/**
 * Writes job submissions in bulk: those that arrive while the previous ones are being written
 * share one group-commit unit, with one insert for all their jobs (store/queries/jobs.ts
 * insertJobs), one for all their events (deferred by the group commit) and one for all their
 * audit rows (service/tenancy/audit.ts). On PostgreSQL each statement is a round trip, and a server writes
 * one transaction at a time: two statements per job would cap the rate at which it can accept
 * jobs.
 */
import type { JobRecord } from '../../domain/job.js';
import { insertAudit, type AuditRecord } from '../../store/queries/audit.js';
import { insertJobs, type NewJob } from '../../store/queries/jobs.js';
import type { Db } from '../../store/store.js';
import type { Announce } from '../live/notices.js';

export interface Submission {
  job: NewJob;
  /** Records what goes with the job (its event) in the same unit, and announces it. */
  inserted: (db: Db, record: JobRecord, announce: Announce) => Promise<void>;
  /** Its audit row, but for what the insert decides: the job's id (the subject) and the time. */
  audit?: Omit<AuditRecord, 'subject' | 'at'>;
}

interface Pending extends Submission {
  resolve: (record: JobRecord | undefined) => void;
  reject: (reason: unknown) => void;
}

/** Runs `fn` as one unit on the group commit (or its own transaction), then announces what it gave. */
export type WriteUnit = <T>(fn: (db: Db, announce: Announce) => Promise<T>) => Promise<T>;

export class SubmissionWriter {
  private pending: Pending[] = [];
  /** A unit is on its way to the group commit and will take every pending submission. */
  private queued = false;

  constructor(
    private readonly write: WriteUnit,
    private readonly now: () => number,
  ) {}

  /**
   * Writes the job; its record once committed, or undefined when its project already has a job
   * with its idempotency key.
   */
  submit(s: Submission): Promise<JobRecord | undefined> {
    return new Promise((resolve, reject) => {
      this.pending.push({ ...s, resolve, reject });
      if (this.queued) return;
      this.queued = true;
      void this.writeNext();
    });
  }

  private async writeNext(): Promise<void> {
    let batch: Pending[] | undefined;
    try {
      // Takes the submissions when the unit first runs, not when it was queued, so that all that
      // came while the previous transaction was written go together; a batch the group commit
      // runs again (a conflict) writes the same ones.
      const records = await this.write((db, announce) => {
        batch ??= this.take();
        return this.insert(db, batch, announce);
      });
      batch!.forEach((p, i) => p.resolve(records[i]));
    } catch (e) {
      batch ??= this.take();
      if (batch.length === 1) batch[0]!.reject(e);
      // One job's failure must not fail the others: each alone now, so only its own fails.
      else
        for (const p of batch)
          this.write((db, announce) => this.insert(db, [p], announce)).then(
            ([record]) => p.resolve(record),
            p.reject,
          );
    }
  }

  private take(): Pending[] {
    const batch = this.pending;
    this.pending = [];
    this.queued = false;
    return batch;
  }

  private async insert(db: Db, batch: Pending[], announce: Announce): Promise<(JobRecord | undefined)[]> {
    const records = await insertJobs(
      db,
      batch.map((p) => p.job),
      this.now(),
    );
    const audit: AuditRecord[] = [];
    for (const [i, record] of records.entries()) {
      if (!record) continue; // a repeated idempotency key: no change, nothing to audit
      const p = batch[i]!;
      await p.inserted(db, record, announce);
      if (p.audit) audit.push({ ...p.audit, subject: String(record.id), at: record.createdAt });
    }
    // The batch's audit rows in one insert, in the transaction of its jobs.
    await insertAudit(db, audit, true);
    return records;
  }
}
