import type { ProjectTokenAccess } from '../../domain/project-token-access.js';
import type { User } from '../../domain/user.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

export interface TokenRecord {
  hash: string;
  userId: number | null;
  jobId: number | null;
  label: string;
  expiresAt: number | null;
  /** For project tokens: the project they act in. */
  scope?: string | null;
  /** For project tokens: what they may do there. */
  access?: ProjectTokenAccess | null;
}

export async function insertToken(db: Db, t: TokenRecord, now: number): Promise<void> {
  await db
    .insertInto('api_tokens')
    .values({
      hash: t.hash,
      user_id: t.userId,
      job_id: t.jobId,
      label: t.label,
      created_at: now,
      expires_at: t.expiresAt,
      scope: t.scope ?? null,
      access: t.access ?? null,
    })
    .execute();
}

export interface FoundToken {
  user: User | null;
  jobId: number | null;
  expiresAt: number | null;
  scope: string | null;
  /** Null unless `scope` is set. */
  access: ProjectTokenAccess | null;
}

/** The token's owner: a user (joined) or a job id. */
export async function findToken(db: Db, hash: string): Promise<FoundToken | undefined> {
  const row = await db
    .selectFrom('api_tokens as t')
    .leftJoin('users as u', 'u.id', 't.user_id')
    .select(['t.job_id', 't.expires_at', 't.scope', 't.access', 'u.id', 'u.name', 'u.admin', 'u.created_at'])
    .where('t.hash', '=', hash)
    .executeTakeFirst();
  if (!row) return undefined;
  const user =
    row.id === null || row.name === null || row.admin === null || row.created_at === null
      ? null
      : { id: row.id, name: row.name, admin: row.admin === 1, createdAt: iso(row.created_at) };
  return {
    user,
    jobId: row.job_id === null ? null : Number(row.job_id),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
    scope: row.scope,
    // Anything but an explicit `submit` reads only: a project token minted before access was
    // stored (null), or a value this version does not know, gets the least rights.
    access: row.scope === null ? null : row.access === 'submit' ? 'submit' : 'read',
  };
}

/** Deletes the job's agent token (project tokens die with their resource instance). */
export async function deleteJobTokens(db: Db, jobId: number): Promise<void> {
  await db.deleteFrom('api_tokens').where('job_id', '=', jobId).where('scope', 'is', null).execute();
}

export async function deleteTokensLabelled(db: Db, label: string): Promise<void> {
  await db.deleteFrom('api_tokens').where('label', '=', label).execute();
}
