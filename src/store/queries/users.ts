import type { User } from '../../domain/user.js';
import type { UserRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

const toUser = (r: UserRow): User => ({
  id: r.id,
  name: r.name,
  admin: r.admin === 1,
  createdAt: iso(r.created_at),
});

export async function insertUser(db: Db, name: string, admin: boolean, now: number): Promise<User> {
  const row = await db
    .insertInto('users')
    .values({ name, admin: admin ? 1 : 0, created_at: now })
    .returningAll()
    .executeTakeFirstOrThrow();
  return toUser(row);
}

export async function findUserByName(db: Db, name: string): Promise<User | undefined> {
  const row = await db.selectFrom('users').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toUser(row);
}

export async function listUsers(db: Db): Promise<User[]> {
  return (await db.selectFrom('users').selectAll().orderBy('name').execute()).map(toUser);
}

export async function deleteUser(db: Db, id: number): Promise<void> {
  await db.deleteFrom('users').where('id', '=', id).execute();
}

export async function countUsers(db: Db): Promise<number> {
  const r = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
