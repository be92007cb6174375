import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { checkName, USER_NAME, USER_NAME_HELP } from '../../domain/names.js';
import type { Principal, User } from '../../domain/user.js';
import { appendEvent } from '../../store/queries/events.js';
import {
  deleteToken,
  findUserToken,
  insertToken,
  listUserTokens,
  type UserToken,
} from '../../store/queries/tokens.js';
import { deleteUser, findUserByName, insertUser, listUsers } from '../../store/queries/users.js';
import type { Db } from '../../store/store.js';
import { requireAdmin, requireUser } from './access.js';
import { audit } from './audit.js';
import type { ServiceContext } from '../context.js';
import { isoOrNull } from '../../store/queries/time.js';
import {
  hashToken,
  newToken,
  TOKEN_ID,
  tokenExpiresAt,
  tokenId,
  type CreatedUser,
  type NewTokenView,
  type TokenExpiry,
  type TokenView,
} from '../../domain/tokens.js';

export interface NewUser {
  name: string;
  admin?: boolean;
  /** When its first token expires (default: never). */
  tokenExpiresIn?: string;
  tokenExpiresAt?: string;
}

/** Creates a user and its first token; the token is returned once and never again. */
export async function createUser(ctx: ServiceContext, p: Principal, input: NewUser): Promise<CreatedUser> {
  requireAdmin(p, 'create users');
  return createUserUnchecked(ctx, input, p);
}

/** For bootstrap: no caller yet (`by` is undefined: the audit says `system`). */
export async function createUserUnchecked(
  ctx: ServiceContext,
  input: NewUser,
  by?: Principal,
): Promise<CreatedUser> {
  const name = checkName(USER_NAME, USER_NAME_HELP, 'user name', input.name);
  const now = ctx.now();
  const expiresAt = tokenExpiresAt(
    { expiresIn: input.tokenExpiresIn, expiresAt: input.tokenExpiresAt },
    now,
    {
      in: 'tokenExpiresIn',
      at: 'tokenExpiresAt',
    },
  );
  return ctx.store.transaction(async (db) => {
    if (await findUserByName(db, name)) throw new ConflictError(`user "${name}" already exists`);
    const user = await insertUser(db, name, input.admin ?? false, now);
    const token = await issueToken(db, user, 'initial token', expiresAt, now);
    await appendEvent(
      db,
      {
        subjectKind: 'user',
        subject: name,
        type: 'created',
        message: `user ${name} created${user.admin ? ' (admin)' : ''}`,
      },
      now,
    );
    await audit(
      db,
      by,
      {
        action: 'user.create',
        subject: name,
        detail: { admin: user.admin, token: token.id, expiresAt: token.expiresAt },
      },
      now,
    );
    return { ...user, token: token.token, tokenId: token.id, tokenExpiresAt: token.expiresAt };
  });
}

async function issueToken(
  db: Db,
  user: User,
  label: string,
  expiresAt: number | null,
  now: number,
): Promise<NewTokenView> {
  let token = newToken('user');
  // A new token's id must name it alone; a clash of 48 random bits is all but impossible.
  while (await findUserToken(db, tokenId(hashToken(token)))) token = newToken('user');
  const hash = hashToken(token);
  await insertToken(db, { hash, userId: user.id, jobId: null, label, expiresAt }, now);
  return {
    name: user.name,
    token,
    id: tokenId(hash),
    label,
    createdAt: new Date(now).toISOString(),
    lastUsedAt: null,
    expiresAt: isoOrNull(expiresAt),
  };
}

/** The caller may manage `name`'s tokens: admins anyone's, users their own. */
function requireSelfOrAdmin(p: Principal, name: string, action: string): void {
  const me = requireUser(p);
  if (me.name !== name) requireAdmin(p, action);
}

async function requireUserNamed(db: Db, name: string): Promise<User> {
  const user = await findUserByName(db, name);
  if (!user) throw new NotFoundError(`user "${name}" not found`);
  return user;
}

/** A new token for `name`: admins for anyone, users for themselves. */
export async function createUserToken(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  label = 'token',
  expiry: TokenExpiry = {},
): Promise<NewTokenView> {
  requireSelfOrAdmin(p, name, "create other users' tokens");
  const now = ctx.now();
  const expiresAt = tokenExpiresAt(expiry, now);
  return ctx.store.transaction(async (db) => {
    const user = await requireUserNamed(db, name);
    const token = await issueToken(db, user, label, expiresAt, now);
    await appendEvent(
      db,
      {
        subjectKind: 'user',
        subject: name,
        type: 'token-created',
        message: `token "${label}" created for ${name}`,
      },
      now,
    );
    await audit(
      db,
      p,
      {
        action: 'token.create',
        subject: token.id,
        detail: { user: name, label, expiresAt: token.expiresAt },
      },
      now,
    );
    return token;
  });
}

/** A token as listed: what `UserToken` carries beyond (its hash, its owner) stays here. */
const view = ({ id, label, createdAt, lastUsedAt, expiresAt }: UserToken): TokenView => ({
  id,
  label,
  createdAt,
  lastUsedAt,
  expiresAt,
});

/** `name`'s tokens (admins: anyone's; users: their own), oldest first — never a token itself. */
export async function listTokens(ctx: ServiceContext, p: Principal, name: string): Promise<TokenView[]> {
  requireSelfOrAdmin(p, name, "list other users' tokens");
  const user = await requireUserNamed(ctx.store.db, name);
  return (await listUserTokens(ctx.store.db, user.id)).map(view);
}

const tokenNotFound = (id: string, name?: string) =>
  new NotFoundError(
    TOKEN_ID.test(id)
      ? `token ${id} not found${name === undefined ? '' : ` among ${name}'s tokens`} (see: berth token list)`
      : `token id "${id}" is not a token id: 12 hex digits, as berth token list shows them`,
  );

/**
 * Revokes one of a user's tokens by its id: `name`'s when given, else whoever's it is (a user
 * only ever finds their own; to anyone else another's is not found). The token is deleted, and
 * every server drops it from its cache: 401 from the next request on.
 */
export async function revokeToken(
  ctx: ServiceContext,
  p: Principal,
  id: string,
  name?: string,
): Promise<TokenView & { name: string }> {
  const me = requireUser(p);
  if (name !== undefined) requireSelfOrAdmin(p, name, "revoke other users' tokens");
  const revoked = await ctx.store.transaction(async (db) => {
    const owner = name === undefined ? undefined : await requireUserNamed(db, name);
    const token = TOKEN_ID.test(id)
      ? await findUserToken(db, id, owner?.id ?? (me.admin ? undefined : me.id))
      : undefined;
    if (!token) throw tokenNotFound(id, name);
    const ownerName = token.userName;
    await deleteToken(db, token.hash);
    const now = ctx.now();
    await appendEvent(
      db,
      {
        subjectKind: 'user',
        subject: ownerName,
        type: 'token-revoked',
        message: `token "${token.label}" (${token.id}) of ${ownerName} revoked`,
      },
      now,
    );
    await audit(
      db,
      p,
      { action: 'token.revoke', subject: token.id, detail: { user: ownerName, label: token.label } },
      now,
    );
    return { ...view(token), name: ownerName, hash: token.hash };
  });
  // After the commit, so that no request can cache the token again in between; the notice tells
  // the other replicas' caches (token-cache.ts follow).
  ctx.tokenCache?.forgetToken(revoked.hash);
  ctx.changes?.publish({ kind: 'token-revoked', name: revoked.name });
  const { hash: _hash, ...result } = revoked;
  return result;
}

export async function getUsers(ctx: ServiceContext, p: Principal): Promise<User[]> {
  requireAdmin(p, 'list users');
  return listUsers(ctx.store.db);
}

export async function getUser(ctx: ServiceContext, p: Principal, name: string): Promise<User> {
  if (!(p.kind === 'user' && p.user.name === name)) requireAdmin(p, 'read other users');
  const user = await findUserByName(ctx.store.db, name);
  if (!user) throw new NotFoundError(`user "${name}" not found`);
  return user;
}

export async function removeUser(ctx: ServiceContext, p: Principal, name: string): Promise<void> {
  const me = requireAdmin(p, 'delete users');
  if (me.name === name) throw new ConflictError('you cannot delete yourself');
  const id = await ctx.store.transaction(async (db) => {
    const user = await findUserByName(db, name);
    if (!user) throw new NotFoundError(`user "${name}" not found`);
    await deleteUser(db, user.id);
    const now = ctx.now();
    await appendEvent(
      db,
      { subjectKind: 'user', subject: name, type: 'deleted', message: `user ${name} deleted` },
      now,
    );
    await audit(db, p, { action: 'user.delete', subject: name }, now);
    return user.id;
  });
  // After the commit, so that no request can cache the token again in between.
  ctx.tokenCache?.forgetUser(id);
  ctx.changes?.publish({ kind: 'user-deleted', name });
}
