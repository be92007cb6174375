import { UnauthorizedError } from '../domain/errors.js';
import type { Principal } from '../domain/user.js';
import { findToken } from '../store/queries/tokens.js';
import type { ServiceContext } from './context.js';
import { hashToken } from './tokens.js';

/** Resolves a bearer token to the principal it stands for, or throws 401. */
export async function authenticate(ctx: ServiceContext, token: string | undefined): Promise<Principal> {
  if (!token) throw new UnauthorizedError();
  const found = await findToken(ctx.store.db, hashToken(token));
  if (!found) throw new UnauthorizedError('invalid token');
  if (found.expiresAt !== null && found.expiresAt <= ctx.now())
    throw new UnauthorizedError('token has expired');
  if (found.user) return { kind: 'user', user: found.user };
  if (found.jobId !== null) return { kind: 'job', jobId: found.jobId };
  throw new UnauthorizedError('invalid token');
}
