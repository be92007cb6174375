/**
 * API tokens: 32 random bytes, shown once, stored only as a SHA-256 hash. A fast hash is right
 * here (unlike for passwords): a token has 256 bits of entropy, so there is nothing to brute-force.
 */
import { createHash, randomBytes } from 'node:crypto';

/** `agent`: a worker's one-time registration credential (never an API token). */
export type TokenKind = 'user' | 'job' | 'agent';

export function newToken(kind: TokenKind): string {
  const prefix = { user: 'berth', job: 'berthj', agent: 'bertha' }[kind];
  return `${prefix}_${randomBytes(32).toString('base64url')}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
