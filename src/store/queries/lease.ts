/**
 * The leader's lease (PostgreSQL): one row whose `term` grows by one at every election and
 * serves as the fencing token of the leader's writes. Every time is taken on the database's
 * clock, so replicas whose clocks disagree still agree on who leads.
 */
import { sql } from 'kysely';
import type { Db } from '../store.js';

const NAME = 'scheduler';
/** Now on the database's clock, in epoch milliseconds. */
const DB_NOW = sql<number>`(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export interface Lease {
  holder: string;
  url: string;
  term: number;
  expiresAt: number;
  /** The database's clock when this was read. */
  now: number;
}

export async function readLease(db: Db): Promise<Lease | undefined> {
  const row = await db
    .selectFrom('leader_lease')
    .select(['holder', 'url', 'term', 'expires_at', DB_NOW.as('now')])
    .where('name', '=', NAME)
    .executeTakeFirst();
  return (
    row && {
      holder: row.holder,
      url: row.url,
      term: row.term,
      expiresAt: row.expires_at,
      now: Number(row.now),
    }
  );
}

/** Takes the lease if it has expired (or was given up): the new term, or undefined if someone holds it. */
export async function acquireLease(
  db: Db,
  holder: string,
  url: string,
  ttlMs: number,
): Promise<number | undefined> {
  const row = await db
    .updateTable('leader_lease')
    .set({ holder, url, term: sql`term + 1`, expires_at: sql`${DB_NOW} + ${ttlMs}` })
    .where('name', '=', NAME)
    .where('expires_at', '<', DB_NOW)
    .returning('term')
    .executeTakeFirst();
  return row?.term;
}

/** Extends the lease of `holder` in `term` if it still holds it and it has not expired. */
export async function renewLease(db: Db, holder: string, term: number, ttlMs: number): Promise<boolean> {
  const row = await db
    .updateTable('leader_lease')
    .set({ expires_at: sql`${DB_NOW} + ${ttlMs}` })
    .where('name', '=', NAME)
    .where('holder', '=', holder)
    .where('term', '=', term)
    .where('expires_at', '>=', DB_NOW)
    .returning('term')
    .executeTakeFirst();
  return row !== undefined;
}

/** Gives the lease up at once (a clean shutdown), so that another replica takes it now. */
export async function releaseLease(db: Db, holder: string, term: number): Promise<void> {
  await db
    .updateTable('leader_lease')
    .set({ expires_at: 0 })
    .where('name', '=', NAME)
    .where('holder', '=', holder)
    .where('term', '=', term)
    .execute();
}

/**
 * Inside a transaction of the leader: whether `holder` still leads in `term`, its lease not
 * expired. The row is locked
 * for share until the transaction ends, so an election (an update of the row) waits for it: a
 * write that passed the check is committed before a new leader can start reading the store.
 */
export async function holdsTerm(db: Db, holder: string, term: number): Promise<boolean> {
  const row = await db
    .selectFrom('leader_lease')
    .select('term')
    .where('name', '=', NAME)
    .where('holder', '=', holder)
    .where('term', '=', term)
    .where('expires_at', '>=', DB_NOW)
    .forShare()
    .executeTakeFirst();
  return row !== undefined;
}
