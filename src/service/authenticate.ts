import { UnauthorizedError } from '../domain/errors.js';
import type { Principal } from '../domain/user.js';
import { findToken } from '../store/queries/tokens.js';
import type { ServiceContext } from './context.js';
import { DEFAULT_PROJECT_TOKEN_ACCESS } from '../domain/project-token-access.js';
import { hashToken } from '../domain/tokens.js';

/** Resolves a bearer token to the principal it stands for, or throws 401. */
export async function authenticate(ctx: ServiceContext, token: string | undefined): Promise<Principal> {
  if (!token) throw new UnauthorizedError();
  const hash = hashToken(token);
  const cached = ctx.tokenCache?.get(hash, ctx.now());
  if (cached) return cached;
  const found = await findToken(ctx.store.db, hash);
  if (!found) throw new UnauthorizedError('invalid token');
  if (found.expiresAt !== null && found.expiresAt <= ctx.now())
    throw new UnauthorizedError('token has expired');
  if (found.user) {
    const principal: Principal = { kind: 'user', user: found.user };
    // A cached token is not checked against its expiry again: cache only tokens that never expire.
    if (found.expiresAt === null) ctx.tokenCache?.set(hash, principal, ctx.now());
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
