import type { Selectable } from 'kysely';
import type { PriorityClass } from '../../domain/priority-class.js';
import type { PriorityClassesTable } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

const toPriorityClass = (r: Selectable<PriorityClassesTable>): PriorityClass => ({
  name: r.name,
  value: Number(r.value),
  description: r.description,
  createdAt: iso(r.created_at),
});

export async function insertPriorityClass(
  db: Db,
  c: Pick<PriorityClass, 'name' | 'value' | 'description'>,
  now: number,
): Promise<void> {
  await db
    .insertInto('priority_classes')
    .values({ name: c.name, value: c.value, description: c.description, created_at: now })
    .execute();
}

export async function findPriorityClass(db: Db, name: string): Promise<PriorityClass | undefined> {
  const row = await db.selectFrom('priority_classes').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toPriorityClass(row);
}

/** Every class, highest value first (the order users pick from). */
export async function listPriorityClasses(db: Db): Promise<PriorityClass[]> {
  const rows = await db
    .selectFrom('priority_classes')
    .selectAll()
    .orderBy('value', 'desc')
    .orderBy('name')
    .execute();
  return rows.map(toPriorityClass);
}

export async function deletePriorityClass(db: Db, name: string): Promise<boolean> {
  const r = await db.deleteFrom('priority_classes').where('name', '=', name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
