/**
 * The orders a project's job list can be read in, and a place in one of them: the opaque cursor
 * a page hands out for the next. Pure: no I/O.
 */
import { BadRequestError } from './errors.js';
import { JOB_SORTS, type JobSort } from './job.js';

export { JOB_SORTS, type JobSort };

/** What a job is sorted by. */
export interface Sortable {
  id: number;
  priority: number;
}

/** A place in an order: after the job with this sort key (its id, or its priority) and id. */
export interface JobKey {
  key: number;
  id: number;
}

export const byPriority = (sort: JobSort): boolean => sort === '-priority' || sort === 'priority';

export function jobKey(sort: JobSort, job: Sortable): JobKey {
  return { key: byPriority(sort) ? job.priority : job.id, id: job.id };
}

/** The comparator of an order. */
export function compareJobs(sort: JobSort): (a: Sortable, b: Sortable) => number {
  switch (sort) {
    case '-id':
      return (a, b) => b.id - a.id;
    case 'id':
      return (a, b) => a.id - b.id;
    case '-priority':
      return (a, b) => b.priority - a.priority || b.id - a.id;
    case 'priority':
      return (a, b) => a.priority - b.priority || b.id - a.id;
  }
}

/** base64url of `[sort, key, id]`: opaque to clients, and tied to the order it came from. */
export function encodeCursor(sort: JobSort, at: JobKey): string {
  return Buffer.from(JSON.stringify([sort, at.key, at.id])).toString('base64url');
}

export function decodeCursor(cursor: string, sort: JobSort): JobKey {
  const bad = () =>
    new BadRequestError('cursor: not a cursor this server made; use the X-Next-Cursor of the previous page');
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    !JOB_SORTS.includes(parsed[0] as JobSort) ||
    !Number.isSafeInteger(parsed[1]) ||
    !Number.isSafeInteger(parsed[2])
  )
    throw bad();
  const [from, key, id] = parsed as [JobSort, number, number];
  if (from !== sort) {
    throw new BadRequestError(
      `cursor: it continues a list sorted by ${from}, not ${sort}; ask with sort=${from}, or start again without a cursor`,
    );
  }
  return { key, id };
}
