import type { ServiceContext } from '../../service/context.js';
import { readUsage } from '../../service/upkeep/usage.js';
import { UsageQuery, UsageReportSchema } from '../usage-schemas.js';
import type { Router } from './types.js';

export async function usageRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  api.get(
    '/usage',
    {
      schema: {
        tags: ['usage'],
        summary:
          'Resource·hours, jobs by outcome and waits over whole hours, per project, user or queue, from the hourly rollups of the usage ledger; admins see every project, others their own. Allocations still running are counted when they end',
        querystring: UsageQuery,
        response: { 200: UsageReportSchema },
      },
    },
    async (req) => readUsage(ctx, req.principal, req.query),
  );
}
