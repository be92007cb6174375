import type { Db } from '../store.js';
import { insertRows } from './bulk-insert.js';
import type { Insertable } from 'kysely';
import type { EventRow, EventsTable } from '../schema.js';
import { iso } from './time.js';
import { dialectOf } from './statement-text.js';

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

type EventValues = Insertable<EventsTable>;

const toValues = (e: EventInput, now: number): EventValues => ({
  at: now,
  subject_kind: e.subjectKind,
  subject: e.subject,
  project: e.project ?? null,
  job_id: e.jobId ?? null,
  type: e.type,
  message: e.message,
  data: e.data === undefined ? null : JSON.stringify(e.data),
});

/** The columns of toValues, in its order (insertRows takes each row's values in that order). */
const COLUMNS = Object.keys(toValues({} as EventInput, 0));

/**
 * The events of transactions whose events are inserted together just before they commit (a group
 * commit's: one statement for a batch instead of one per event, each a round trip on PostgreSQL).
 */
const deferred = new WeakMap<Db, EventValues[]>();

/**
 * Records an event in transaction `db`: at once, or — in a transaction that defers its events —
 * with the others just before it commits, in the order they were appended.
 */
export async function appendEvent(db: Db, e: EventInput, now: number): Promise<void> {
  const batch = deferred.get(db);
  if (batch) batch.push(toValues(e, now));
  else await db.insertInto('events').values(toValues(e, now)).execute();
}

/** Transaction `tx` defers its events until `flushEvents(tx)`. */
export const deferEvents = (tx: Db): void => void deferred.set(tx, []);

/** Inserts the events `tx` deferred; it appends directly from now on. */
export async function flushEvents(tx: Db): Promise<void> {
  const rows = deferred.get(tx);
  deferred.delete(tx);
  if (rows?.length)
    await insertRows(
      tx,
      dialectOf(tx),
      'events',
      COLUMNS,
      rows.map((r) => Object.values(r)),
    );
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
