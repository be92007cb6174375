import { readAudit } from '../../service/tenancy/audit.js';
import type { ServiceContext } from '../../service/context.js';
import { AuditQuery } from '../audit-schemas.js';
import type { Router } from './types.js';

export async function auditRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  api.get(
    '/audit',
    {
      schema: {
        tags: ['audit'],
        summary:
          'Who changed what, when and from where (admin), newest first; X-Next-Cursor says where the next page starts',
        querystring: AuditQuery,
      },
    },
    async (req, reply) => {
      const page = await readAudit(ctx, req.principal, req.query);
      if (page.nextCursor !== undefined) void reply.header('x-next-cursor', page.nextCursor);
      return page.entries;
    },
  );
}
