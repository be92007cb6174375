/** Installation-wide settings kept with the records (PostgreSQL installations). */
import type { Db } from '../store.js';

export async function readSetting(db: Db, name: string): Promise<string | undefined> {
  return (await db.selectFrom('settings').select('value').where('name', '=', name).executeTakeFirst())?.value;
}

/** Sets `name` unless it is set already; returns the value that holds (first writer wins). */
export async function initSetting(db: Db, name: string, value: string): Promise<string> {
  await db
    .insertInto('settings')
    .values({ name, value })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  return (await readSetting(db, name)) ?? value;
}
