/**
 * API tokens: 32 random bytes, shown once, stored only as a SHA-256 hash. A fast hash is right
 * here (unlike for passwords): a token has 256 bits of entropy, so there is nothing to brute-force.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parseDuration } from './duration.js';
import { BadRequestError } from './errors.js';
import type { User } from './user.js';

/** `agent`: a worker's one-time registration credential (never an API token). */
export type TokenKind = 'user' | 'job' | 'agent';

export function newToken(kind: TokenKind): string {
  const prefix = { user: 'berth', job: 'berthj', agent: 'bertha' }[kind];
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * A token's public id: the first 12 hex digits of its hash. The hash is of 256 random bits, so
 * neither it nor a part of it tells anything about the token; 48 bits keep ids distinct among
 * any number of tokens a server will hold (a clash is refused at creation, users.ts).
 */
export const TOKEN_ID_LENGTH = 12;
export const TOKEN_ID = /^[0-9a-f]{12}$/;

export const tokenId = (hash: string): string => hash.slice(0, TOKEN_ID_LENGTH);

/** `GET /users/{name}/tokens`: a user's token as listed — never the token, nor its hash. */
export interface TokenView {
  id: string;
  label: string;
  createdAt: string;
  /** Recorded at most about once a minute, so up to a minute behind; null: never used. */
  lastUsedAt: string | null;
  /** Null: until revoked (or its user deleted). */
  expiresAt: string | null;
}

/** `POST /users/{name}/tokens`: the new token, shown once, with its listing. */
export interface NewTokenView extends TokenView {
  name: string;
  token: string;
}

/** `POST /users`: the user, its first token (shown once), and that token's id and expiry. */
export type CreatedUser = User & { token: string; tokenId: string; tokenExpiresAt: string | null };

/** How long a token may live: `expiresIn` (a duration such as `30d`) or `expiresAt` (a time). */
export interface TokenExpiry {
  expiresIn?: string;
  expiresAt?: string;
}

/** The longest a token may be given to live: ten years, far beyond any sane rotation. */
const MAX_LIFETIME_MS = 10 * 365 * 86_400_000;

/**
 * When a token made at `now` expires (ms), or null for never; a 400 for a malformed, past or
 * absurd expiry, or for both fields at once. `fields` names them as the request did.
 */
export function tokenExpiresAt(
  expiry: TokenExpiry,
  now: number,
  fields: { in: string; at: string } = { in: 'expiresIn', at: 'expiresAt' },
): number | null {
  const { expiresIn, expiresAt } = expiry;
  if (expiresIn !== undefined && expiresAt !== undefined)
    throw new BadRequestError(`give either ${fields.in} or ${fields.at}, not both`);
  let at: number;
  if (expiresIn !== undefined) {
    const seconds = parseDuration(expiresIn);
    if (seconds === undefined || seconds <= 0)
      throw new BadRequestError(
        `${fields.in} "${expiresIn}" is not a duration: write e.g. 30d, 12h, 90m or a number of seconds`,
      );
    at = now + seconds * 1000;
  } else if (expiresAt !== undefined) {
    at = Date.parse(expiresAt);
    if (!Number.isFinite(at))
      throw new BadRequestError(`${fields.at} "${expiresAt}" is not a time: write e.g. 2030-01-31T00:00:00Z`);
    if (at <= now) throw new BadRequestError(`${fields.at} ${expiresAt} is in the past`);
  } else return null;
  if (at - now > MAX_LIFETIME_MS) throw new BadRequestError('a token may live at most 10 years (3650d)');
  return at;
}
