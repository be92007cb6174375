import type { Db } from '../store.js';
import type { EventRow } from '../schema.js';
import { iso } from './time.js';

export interface EventInput {
  subjectKind: string;
  subject: string;
  type: string;
  message: string;
  project?: string | null;
  jobId?: number | null;
  data?: unknown;
}

export interface EventView {
  id: number;
  at: string;
  type: string;
  message: string;
  subjectKind: string;
  subject: string;
  data?: unknown;
}

export async function appendEvent(db: Db, e: EventInput, now: number): Promise<void> {
  await db
    .insertInto('events')
    .values({
      at: now,
      subject_kind: e.subjectKind,
      subject: e.subject,
      project: e.project ?? null,
      job_id: e.jobId ?? null,
      type: e.type,
      message: e.message,
      data: e.data === undefined ? null : JSON.stringify(e.data),
    })
    .execute();
}

export const toEventView = (r: EventRow): EventView => ({
  id: Number(r.id),
  at: iso(r.at),
  type: r.type,
  message: r.message,
  subjectKind: r.subject_kind,
  subject: r.subject,
  ...(r.data === null ? {} : { data: JSON.parse(r.data) as unknown }),
});

/** A job's timeline, oldest first (through the events_job index). */
export async function listJobEvents(db: Db, jobId: number): Promise<EventView[]> {
  const rows = await db.selectFrom('events').selectAll().where('job_id', '=', jobId).orderBy('id').execute();
  return rows.map(toEventView);
}
