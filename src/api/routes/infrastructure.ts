/** Factories, targets, workers, resource types and instances, and the cached images. */
import { running, type ServiceContext } from '../../service/context.js';
import * as images from '../../service/cluster/images.js';
import * as infra from '../../service/cluster/infrastructure.js';
import { WorkerQuery } from '../job-schemas.js';
import type { Router } from './types.js';

export async function infrastructureRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['infrastructure'];
  api.get(
    '/factories',
    { schema: { tags, summary: 'Factories with capacity, workers in use and jobs waiting' } },
    async (req) => infra.factories(running(ctx), req.principal),
  );
  api.get(
    '/targets',
    { schema: { tags, summary: 'Targets, their factory and required privilege' } },
    async (req) => infra.targets(running(ctx), req.principal),
  );
  api.get(
    '/resource-types',
    { schema: { tags, summary: 'Resource types with capacity, instances in use and jobs waiting' } },
    async (req) => infra.resourceTypes(running(ctx), req.principal),
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
    async (req) => infra.instances(ctx, req.principal, req.query.state),
  );
  // The images are on the machine of the leader, whose factories run the jobs.
  api.get(
    '/images',
    {
      config: { leader: 'only' },
      schema: {
        tags,
        summary:
          'The OCI images cached on the machine that runs the jobs: digest, reference, size, last use, the jobs holding each (admin)',
      },
    },
    async (req) => images.listImages(running(ctx), req.principal),
  );
  api.post(
    '/images/prune',
    {
      config: { leader: 'only' },
      schema: { tags, summary: 'Removes the cached images no job holds; returns them (admin)' },
    },
    async (req) => images.pruneImages(running(ctx), req.principal),
  );
  api.get(
    '/workers',
    { schema: { tags, summary: 'Every worker and its state (admin)', querystring: WorkerQuery } },
    async (req) => infra.workers(ctx, req.principal, req.query.state),
  );
}
