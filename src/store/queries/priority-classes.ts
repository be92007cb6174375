import type { Selectable } from 'kysely';
import type { PriorityClass } from '../../domain/priority-class.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

/** Migration 0003. Typed here through `withTables` so that schema.ts need not change. */
export interface PriorityClassesTable {
  name: string;
  value: number;
  description: string;
  created_at: number;
}

const table = (db: Db) => db.withTables<{ priority_classes: PriorityClassesTable }>();

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
  await table(db)
    .insertInto('priority_classes')
    .values({ name: c.name, value: c.value, description: c.description, created_at: now })
    .execute();
}

export async function findPriorityClass(db: Db, name: string): Promise<PriorityClass | undefined> {
  const row = await table(db)
    .selectFrom('priority_classes')
    .selectAll()
    .where('name', '=', name)
    .executeTakeFirst();
  return row && toPriorityClass(row);
}

/** Every class, highest value first (the order users pick from). */
export async function listPriorityClasses(db: Db): Promise<PriorityClass[]> {
  const rows = await table(db)
    .selectFrom('priority_classes')
    .selectAll()
    .orderBy('value', 'desc')
    .orderBy('name')
    .execute();
  return rows.map(toPriorityClass);
}

export async function deletePriorityClass(db: Db, name: string): Promise<boolean> {
  const r = await table(db).deleteFrom('priority_classes').where('name', '=', name).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
