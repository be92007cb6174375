import type { WhoAmI } from '../../domain/user.js';
import type { Health } from '../../domain/health.js';
import type { ServiceContext } from '../../service/context.js';
import { requireUser } from '../../service/tenancy/access.js';
import type { Router } from './types.js';

export async function metaRoutes(api: Router, ctx: ServiceContext, version: string): Promise<void> {
  api.get(
    '/health',
    {
      config: { public: true },
      schema: { tags: ['meta'], summary: 'Liveness; needs no token', security: [] },
    },
    async (req): Promise<Health> => {
      const c = ctx.cluster;
      if (!c) return { status: 'ok', version, role: 'leader', term: 1, leader: serverUrl(req) };
      const role = c.role();
      return {
        status: 'ok',
        version,
        role,
        term: c.term(),
        leader: role === 'leader' ? serverUrl(req) : (c.leaderUrl() ?? null),
      };
    },
  );
  api.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => api.swagger());
  api.get('/whoami', { schema: { tags: ['meta'], summary: 'The caller' } }, async (req): Promise<WhoAmI> => {
    const p = req.principal;
    if (p.kind === 'job') return { kind: 'job', job: p.jobId };
    if (p.kind === 'project') return { kind: 'project-token', project: p.project, job: p.jobId };
    const user = requireUser(p);
    return { kind: 'user', name: user.name, admin: user.admin, createdAt: user.createdAt };
  });
}

/** This server's own address, as the caller reached it. */
const serverUrl = (req: { protocol: string; host: string }): string => `${req.protocol}://${req.host}`;
