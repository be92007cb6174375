/** Factories, targets, workers, resource types and instances. */
import type { ServiceContext } from '../../service/context.js';
import { requireAdmin, requireUser } from '../../service/access.js';
import { resourceTypeViews } from '../../service/figures.js';
import { listWorkerRows, toWorkerView } from '../../store/queries/workers.js';
import { listInstanceRows, toInstanceView } from '../../store/queries/resource-instances.js';
import { WorkerQuery } from '../job-schemas.js';
import type { Router } from './types.js';

export async function infrastructureRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['infrastructure'];
  api.get(
    '/factories',
    { schema: { tags, summary: 'Factories with capacity, workers in use and jobs waiting' } },
    async (req) => {
      requireUser(req.principal);
      return ctx.runtime!.controller.factoryFigures();
    },
  );
  api.get(
    '/targets',
    { schema: { tags, summary: 'Targets, their factory and required privilege' } },
    async (req) => {
      requireUser(req.principal);
      const figures = new Map(ctx.runtime!.controller.factoryFigures().map((f) => [f.name, f]));
      return Object.entries(ctx.runtime!.targets).map(([name, t]) => {
        const f = figures.get(t.factory);
        return {
          name,
          factory: t.factory,
          privilege: t.privilege ?? null,
          capacity: f?.capacity ?? 0,
          inUse: f?.inUse ?? 0,
          waiting: f?.waiting ?? 0,
        };
      });
    },
  );
  api.get(
    '/resource-types',
    { schema: { tags, summary: 'Resource types with capacity, instances in use and jobs waiting' } },
    async (req) => {
      requireUser(req.principal);
      return resourceTypeViews(ctx.runtime!);
    },
  );
  api.get(
    '/resource-instances',
    {
      schema: {
        tags,
        summary: 'Every resource instance and its state, never its metadata (admin)',
        querystring: WorkerQuery,
      },
    },
    async (req) => {
      requireAdmin(req.principal, 'list resource instances');
      return (await listInstanceRows(ctx.store.db, req.query.state)).map(toInstanceView);
    },
  );
  api.get(
    '/workers',
    { schema: { tags, summary: 'Every worker and its state (admin)', querystring: WorkerQuery } },
    async (req) => {
      requireAdmin(req.principal, 'list workers');
      return (await listWorkerRows(ctx.store.db, req.query.state)).map(toWorkerView);
    },
  );
}
