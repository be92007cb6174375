import { ConflictError, NotFoundError } from '../domain/errors.js';
import { checkName, USER_NAME, USER_NAME_HELP } from '../domain/names.js';
import type { Principal, User } from '../domain/user.js';
import { appendEvent } from '../store/queries/events.js';
import { insertToken } from '../store/queries/tokens.js';
import { deleteUser, findUserByName, insertUser, listUsers } from '../store/queries/users.js';
import type { Db } from '../store/store.js';
import { requireAdmin } from './access.js';
import type { ServiceContext } from './context.js';
import { hashToken, newToken } from '../domain/tokens.js';

export interface NewUser {
  name: string;
  admin?: boolean;
}

/** Creates a user and its first token; the token is returned once and never again. */
export async function createUser(
  ctx: ServiceContext,
  p: Principal,
  input: NewUser,
): Promise<User & { token: string }> {
  requireAdmin(p, 'create users');
  return createUserUnchecked(ctx, input);
}

/** For bootstrap: no caller yet. */
export async function createUserUnchecked(
  ctx: ServiceContext,
  input: NewUser,
): Promise<User & { token: string }> {
  const name = checkName(USER_NAME, USER_NAME_HELP, 'user name', input.name);
  return ctx.store.transaction(async (db) => {
    if (await findUserByName(db, name)) throw new ConflictError(`user "${name}" already exists`);
    const now = ctx.now();
    const user = await insertUser(db, name, input.admin ?? false, now);
    const token = await issueToken(db, user, 'initial token', now);
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
    return { ...user, token };
  });
}

async function issueToken(db: Db, user: User, label: string, now: number): Promise<string> {
  const token = newToken('user');
  await insertToken(
    db,
    { hash: hashToken(token), userId: user.id, jobId: null, label, expiresAt: null },
    now,
  );
  return token;
}

/** A new token for `name`: admins for anyone, users for themselves. */
export async function createUserToken(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  label = 'token',
): Promise<{ name: string; token: string }> {
  if (!(p.kind === 'user' && p.user.name === name)) requireAdmin(p, "create other users' tokens");
  return ctx.store.transaction(async (db) => {
    const user = await findUserByName(db, name);
    if (!user) throw new NotFoundError(`user "${name}" not found`);
    const now = ctx.now();
    const token = await issueToken(db, user, label, now);
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
    return { name, token };
  });
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
    await appendEvent(
      db,
      { subjectKind: 'user', subject: name, type: 'deleted', message: `user ${name} deleted` },
      ctx.now(),
    );
    return user.id;
  });
  // After the commit, so that no request can cache the token again in between.
  ctx.tokenCache?.forgetUser(id);
  ctx.changes?.publish({ kind: 'user-deleted', name });
}
