import type { ServiceContext } from '../../service/context.js';
import {
  createPriorityClass,
  getPriorityClass,
  listClasses,
  removePriorityClass,
} from '../../service/jobs/priority-classes.js';
import { CreatePriorityClassBody, NameParams } from '../schemas.js';
import type { Router } from './types.js';

export async function priorityClassRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['priority classes'];
  api.post(
    '/priority-classes',
    { schema: { tags, summary: 'Create a named priority (admin)', body: CreatePriorityClassBody } },
    async (req, reply) => reply.status(201).send(await createPriorityClass(ctx, req.principal, req.body)),
  );
  api.get(
    '/priority-classes',
    { schema: { tags, summary: 'Priority classes, highest value first' } },
    async (req) => listClasses(ctx, req.principal),
  );
  api.get(
    '/priority-classes/:name',
    { schema: { tags, summary: 'A priority class', params: NameParams } },
    async (req) => getPriorityClass(ctx, req.principal, req.params.name),
  );
  api.delete(
    '/priority-classes/:name',
    {
      schema: {
        tags,
        summary: 'Delete a priority class (admin); jobs keep the value they were given',
        params: NameParams,
      },
    },
    async (req, reply) => {
      await removePriorityClass(ctx, req.principal, req.params.name);
      return reply.status(204).send();
    },
  );
}
