/** Prometheus metrics of this server, in the text exposition format (admins only). */
import { NotFoundError } from '../../domain/errors.js';
import { requireAdmin } from '../../service/tenancy/access.js';
import type { ServiceContext } from '../../service/context.js';
import type { Router } from './types.js';

export async function metricsRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  api.get(
    '/metrics',
    { schema: { tags: ['meta'], summary: 'Prometheus metrics: scheduler, jobs, queues, process (admin)' } },
    async (req, reply) => {
      requireAdmin(req.principal, 'read metrics');
      if (!ctx.metrics) throw new NotFoundError('this server keeps no metrics');
      const text = await ctx.metrics.text();
      return reply.type(ctx.metrics.contentType).send(text);
    },
  );
  api.get(
    '/diag',
    {
      schema: {
        tags: ['meta'],
        summary:
          "This server's figures since it started, as Slurm's sdiag gives them (berth diag): scheduler passes and controller ticks (count, last, mean, max), what waits per queue and factory, the busiest routes and callers (admin)",
      },
    },
    async (req) => {
      requireAdmin(req.principal, "read the server's diagnostics");
      if (!ctx.metrics) throw new NotFoundError('this server keeps no figures');
      return ctx.metrics.diag();
    },
  );
}
