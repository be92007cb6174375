/**
 * API tokens: 32 random bytes, shown once, stored only as a SHA-256 hash. A fast hash is right
 * here (unlike for passwords): a token has 256 bits of entropy, so there is nothing to brute-force.
 */
import { createHash, randomBytes } from 'node:crypto';

export type TokenKind = 'user' | 'job';

export function newToken(kind: TokenKind): string {
  return `${kind === 'job' ? 'berthj' : 'berth'}_${randomBytes(32).toString('base64url')}`;
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
