import { UnauthorizedError } from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import { findToken, touchToken } from '../../store/queries/tokens.js';
import type { ServiceContext } from '../context.js';
import { DEFAULT_PROJECT_TOKEN_ACCESS } from '../../domain/project-token-access.js';
import { hashToken } from '../../domain/tokens.js';

/**
 * Resolves a bearer token to the principal it stands for, or throws 401. `from` is the request's
 * address: it goes with the principal to the audit log.
 */
export async function authenticate(
  ctx: ServiceContext,
  token: string | undefined,
  from?: string,
): Promise<Principal> {
  const principal = await resolve(ctx, token);
  // A fresh object per request: a cached principal is shared by every request with its token.
  return from === undefined ? principal : { ...principal, from };
}

async function resolve(ctx: ServiceContext, token: string | undefined): Promise<Principal> {
  if (!token) throw new UnauthorizedError();
  const hash = hashToken(token);
  const now = ctx.now();
  const cached = ctx.tokenCache?.get(hash, now);
  if (cached) {
    recordUse(ctx, hash, now);
    return cached;
  }
  const generation = ctx.tokenCache?.generation;
  const found = await findToken(ctx.store.db, hash);
  if (!found) throw new UnauthorizedError('invalid token');
  if (found.expiresAt !== null && found.expiresAt <= now) throw new UnauthorizedError('token has expired');
  if (found.user) {
    const principal: Principal = { kind: 'user', user: found.user };
    // Only tokens that never expire are cached: an expiring one is read each time, so that its
    // expiry (even one moved in the store) is honoured from the moment it passes.
    if (found.expiresAt === null) ctx.tokenCache?.set(hash, principal, now, generation);
    recordUse(ctx, hash, now);
    return principal;
  }
  if (found.jobId !== null && found.scope !== null)
    return {
      kind: 'project',
      project: found.scope,
      jobId: found.jobId,
      access: found.access ?? DEFAULT_PROJECT_TOKEN_ACCESS,
    };
  if (found.jobId !== null) return { kind: 'job', jobId: found.jobId };
  throw new UnauthorizedError('invalid token');
}

/**
 * A user token's `last used`: written at most once a minute per token (the cache decides), and
 * not awaited, so that no request waits for it. A failed write is dropped: the next use a minute
 * later records the time again, and nothing depends on it but the token list.
 */
function recordUse(ctx: ServiceContext, hash: string, now: number): void {
  if (!ctx.tokenCache?.shouldRecordUse(hash, now)) return;
  touchToken(ctx.store.db, hash, now).catch(() => {});
}
