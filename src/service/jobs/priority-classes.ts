/** Priority classes: admins name priorities; anyone signed in reads them; jobs refer to them. */
import { ConflictError, NotFoundError, UnprocessableError } from '../../domain/errors.js';
import {
  checkPriorityClassName,
  checkPriorityValue,
  type PriorityClass,
} from '../../domain/priority-class.js';
import type { Principal } from '../../domain/user.js';
import { appendEvent } from '../../store/queries/events.js';
import {
  deletePriorityClass,
  findPriorityClass,
  insertPriorityClass,
  listPriorityClasses,
} from '../../store/queries/priority-classes.js';
import type { Db } from '../../store/store.js';
import { requireAdmin, requireUser } from '../tenancy/access.js';
import { audit } from '../tenancy/audit.js';
import type { ServiceContext } from '../context.js';

export interface PriorityClassInput {
  name: string;
  value: number;
  description?: string;
}

const notFound = (name: string) => new NotFoundError(`priority class "${name}" not found`);

const event = (name: string, type: string, message: string, data?: unknown) => ({
  subjectKind: 'priority-class',
  subject: name,
  type,
  message,
  data,
});

export async function createPriorityClass(
  ctx: ServiceContext,
  p: Principal,
  input: PriorityClassInput,
): Promise<PriorityClass> {
  requireAdmin(p, 'create priority classes');
  const fields = {
    name: checkPriorityClassName(input.name),
    value: checkPriorityValue(input.value),
    description: input.description ?? '',
  };
  return ctx.store.transaction(async (db) => {
    if (await findPriorityClass(db, fields.name))
      throw new ConflictError(`priority class "${fields.name}" already exists`);
    const now = ctx.now();
    await insertPriorityClass(db, fields, now);
    await appendEvent(
      db,
      event(
        fields.name,
        'created',
        `priority class ${fields.name} created with value ${fields.value}`,
        fields,
      ),
      now,
    );
    await audit(db, p, { action: 'priority-class.create', subject: fields.name, detail: { ...fields } }, now);
    return (await findPriorityClass(db, fields.name))!;
  });
}

export async function listClasses(ctx: ServiceContext, p: Principal): Promise<PriorityClass[]> {
  requireUser(p);
  return listPriorityClasses(ctx.store.db);
}

export async function getPriorityClass(
  ctx: ServiceContext,
  p: Principal,
  name: string,
): Promise<PriorityClass> {
  requireUser(p);
  const c = await findPriorityClass(ctx.store.db, name);
  if (!c) throw notFound(name);
  return c;
}

/** Jobs keep the value they were given at submission, so deleting a class changes no job. */
export async function removePriorityClass(ctx: ServiceContext, p: Principal, name: string): Promise<void> {
  requireAdmin(p, 'delete priority classes');
  await ctx.store.transaction(async (db) => {
    if (!(await deletePriorityClass(db, name))) throw notFound(name);
    const now = ctx.now();
    await appendEvent(db, event(name, 'deleted', `priority class ${name} deleted`), now);
    await audit(db, p, { action: 'priority-class.delete', subject: name }, now);
  });
}

/** A submission's `priority`: a number as given, or a class name resolved to its value (422 if unknown). */
export async function resolvePriority(
  db: Db,
  priority: number | string | undefined,
): Promise<{ value: number; priorityClass: string | null }> {
  if (priority === undefined) return { value: 0, priorityClass: null };
  if (typeof priority === 'number') return { value: checkPriorityValue(priority), priorityClass: null };
  const c = await findPriorityClass(db, priority);
  if (c) return { value: c.value, priorityClass: c.name };
  const known = (await listPriorityClasses(db)).map((k) => `${k.name} (${k.value})`);
  throw new UnprocessableError(
    `unknown priority class "${priority}" (known: ${known.join(', ') || 'none; an admin creates them with berth priority create'})`,
  );
}
