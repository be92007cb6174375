import type { ServiceContext } from '../../service/context.js';
import { requireUser } from '../../service/access.js';
import type { Router } from './types.js';

export async function metaRoutes(api: Router, _ctx: ServiceContext, version: string): Promise<void> {
  api.get(
    '/health',
    {
      config: { public: true },
      schema: { tags: ['meta'], summary: 'Liveness; needs no token', security: [] },
    },
    async () => ({ status: 'ok', version }),
  );
  api.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () => api.swagger());
  api.get('/whoami', { schema: { tags: ['meta'], summary: 'The caller' } }, async (req) => {
    const p = req.principal;
    if (p.kind === 'job') return { kind: 'job', job: p.jobId };
    if (p.kind === 'project') return { kind: 'project-token', project: p.project, job: p.jobId };
    const user = requireUser(p);
    return { kind: 'user', name: user.name, admin: user.admin, createdAt: user.createdAt };
  });
}
