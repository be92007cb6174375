import type { ProjectTokenAccess } from '../../domain/project-token-access.js';
import { hashToken, tokenId, type TokenView } from '../../domain/tokens.js';
import type { User } from '../../domain/user.js';
import type { Db } from '../store.js';
import { insertRows } from './bulk-insert.js';
import { dialectOf, runFixed } from './statement-text.js';
import { iso, isoOrNull } from './time.js';

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

const TOKEN_COLUMNS = ['hash', 'user_id', 'job_id', 'label', 'created_at', 'expires_at', 'scope', 'access'];

export async function insertToken(db: Db, t: TokenRecord, now: number): Promise<void> {
  const values = [t.hash, t.userId, t.jobId, t.label, now, t.expiresAt, t.scope ?? null, t.access ?? null];
  await insertRows(db, dialectOf(db), 'api_tokens', TOKEN_COLUMNS, [values]);
}

/**
 * Keeps `token` (newToken('job')) as job `jobId`'s: an agent's, and the job's own BERTH_TOKEN. Only
 * its hash is kept; it never expires by itself and is deleted when the job ends.
 */
export function insertJobToken(
  db: Db,
  token: string,
  jobId: number,
  label: string,
  now: number,
): Promise<void> {
  return insertToken(db, { hash: hashToken(token), userId: null, jobId, label, expiresAt: null }, now);
}

export interface FoundToken {
  user: User | null;
  jobId: number | null;
  expiresAt: number | null;
  scope: string | null;
  /** Null unless `scope` is set. */
  access: ProjectTokenAccess | null;
}

/** A token's row, with its user's columns (null for a job's token). */
interface FoundRow {
  job_id: number | string | null;
  expires_at: number | string | null;
  scope: string | null;
  access: string | null;
  id: number | null;
  name: string | null;
  admin: number | null;
  created_at: number | string | null;
}

/** The token's owner: a user (joined) or a job id. */
export async function findToken(db: Db, hash: string): Promise<FoundToken | undefined> {
  // Every API call looks its token up: a fixed text (statement-text.ts).
  const [row] = await runFixed<FoundRow>(
    db,
    'find token',
    (p) =>
      'SELECT t.job_id, t.expires_at, t.scope, t.access, u.id, u.name, u.admin, u.created_at ' +
      `FROM api_tokens AS t LEFT JOIN users AS u ON u.id = t.user_id WHERE t.hash = ${p(1)}`,
    [hash],
  );
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
  await runFixed(
    db,
    'delete job tokens',
    (p) => `DELETE FROM api_tokens WHERE job_id = ${p(1)} AND scope IS NULL`,
    [jobId],
  );
}

/** Deletes the `token` well's tokens of one instance (never a user's, whatever its label). */
export async function deleteTokensLabelled(db: Db, label: string): Promise<void> {
  await db.deleteFrom('api_tokens').where('label', '=', label).where('user_id', 'is', null).execute();
}

/** A user's token as listed, with its hash (which stays in the server) and its owner. */
export interface UserToken extends TokenView {
  hash: string;
  userId: number;
  userName: string;
}

const userTokens = (db: Db) =>
  db
    .selectFrom('api_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .select(['t.hash', 't.label', 't.created_at', 't.last_used_at', 't.expires_at', 'u.id', 'u.name']);

const toUserToken = (r: {
  hash: string;
  label: string;
  created_at: number | string;
  last_used_at: number | string | null;
  expires_at: number | string | null;
  id: number;
  name: string;
}): UserToken => ({
  id: tokenId(r.hash),
  hash: r.hash,
  userId: r.id,
  userName: r.name,
  label: r.label,
  createdAt: iso(r.created_at),
  lastUsedAt: isoOrNull(r.last_used_at),
  expiresAt: isoOrNull(r.expires_at),
});

/** A user's tokens, oldest first. */
export async function listUserTokens(db: Db, userId: number): Promise<UserToken[]> {
  const rows = await userTokens(db)
    .where('t.user_id', '=', userId)
    .orderBy('t.created_at')
    .orderBy('t.hash')
    .execute();
  return rows.map(toUserToken);
}

/**
 * The user token with public id `id` (a prefix of its hash: domain/tokens.ts), of `userId` when
 * given. A range on the hash, so that the primary key's index finds it among every token.
 */
export async function findUserToken(db: Db, id: string, userId?: number): Promise<UserToken | undefined> {
  let q = userTokens(db)
    // Hex digits sort below "g" in every collation.
    .where('t.hash', '>=', id)
    .where('t.hash', '<', `${id}g`);
  if (userId !== undefined) q = q.where('t.user_id', '=', userId);
  const rows = await q.limit(2).execute();
  const found = rows.filter((r) => tokenId(r.hash) === id);
  return found.length === 1 ? toUserToken(found[0]!) : undefined;
}

export async function deleteToken(db: Db, hash: string): Promise<void> {
  await db.deleteFrom('api_tokens').where('hash', '=', hash).execute();
}

/** Records that the token was used at `at` (never moving it back). */
export async function touchToken(db: Db, hash: string, at: number): Promise<void> {
  await db
    .updateTable('api_tokens')
    .set({ last_used_at: at })
    .where('hash', '=', hash)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', at)]))
    .execute();
}
