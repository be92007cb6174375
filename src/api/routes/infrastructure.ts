/** Factories, targets and workers. */
import type { ServiceContext } from '../../service/context.js';
import { requireAdmin, requireUser } from '../../service/access.js';
import { listWorkerRows, toWorkerView } from '../../store/queries/workers.js';
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
    '/workers',
    { schema: { tags, summary: 'Every worker and its state (admin)', querystring: WorkerQuery } },
    async (req) => {
      requireAdmin(req.principal, 'list workers');
      return (await listWorkerRows(ctx.store.db, req.query.state)).map(toWorkerView);
    },
  );
}
