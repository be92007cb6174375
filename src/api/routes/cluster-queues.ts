import {
  createClusterQueue,
  deleteQueue,
  getQueue,
  listQueues,
  updateQueue,
} from '../../service/cluster/cluster-queues.js';
import type { ServiceContext } from '../../service/context.js';
import { pendingJobs } from '../../service/jobs/pending.js';
import { queueHistoryOf } from '../../service/live/queue-history.js';
import { Type } from '@sinclair/typebox';
import { CreateQueueBody, NameParams, PatchQueueBody, PendingQuery } from '../schemas.js';
import type { Router } from './types.js';

const HistoryQuery = Type.Object(
  {
    minutes: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 43_200,
        default: 60,
        description:
          'how far back, in minutes (the server keeps 6 hours unless queueHistory.keep says otherwise)',
      }),
    ),
  },
  { additionalProperties: false },
);

export async function queueRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['cluster queues'];
  api.post(
    '/cluster-queues',
    { schema: { tags, summary: 'Create a cluster queue (admin)', body: CreateQueueBody } },
    async (req, reply) => reply.status(201).send(await createClusterQueue(ctx, req.principal, req.body)),
  );
  api.get(
    '/cluster-queues',
    { schema: { tags, summary: 'List cluster queues with usage and pending counts' } },
    async (req) => listQueues(ctx, req.principal),
  );
  api.get(
    '/cluster-queues/:name',
    { schema: { tags, summary: 'A cluster queue', params: NameParams } },
    async (req) => getQueue(ctx, req.principal, req.params.name),
  );
  api.get(
    '/cluster-queues/:name/pending',
    {
      config: { leader: 'only' },
      schema: {
        tags,
        summary:
          'Pending jobs in admission order; jobs of projects the caller cannot see are counted but hidden',
        params: NameParams,
        querystring: PendingQuery,
      },
    },
    async (req) =>
      pendingJobs(ctx, req.principal, req.params.name, req.query.offset ?? 0, req.query.limit ?? 100),
  );
  api.get(
    '/cluster-queues/:name/history',
    {
      schema: {
        tags,
        summary:
          "The queue's figures over time, oldest first: a sample every few seconds of its usage, borrowed and nominal quota per resource, pending, admitted and running jobs, and admissions since the sample before",
        params: NameParams,
        querystring: HistoryQuery,
      },
    },
    async (req) => queueHistoryOf(ctx, req.principal, req.params.name, req.query.minutes ?? 60),
  );
  api.patch(
    '/cluster-queues/:name',
    {
      schema: {
        tags,
        summary: 'Change a cluster queue (admin); given fields replace old ones',
        params: NameParams,
        body: PatchQueueBody,
      },
    },
    async (req) => updateQueue(ctx, req.principal, req.params.name, req.body),
  );
  api.delete(
    '/cluster-queues/:name',
    {
      schema: {
        tags,
        summary: 'Delete a cluster queue (admin); 409 while projects use it',
        params: NameParams,
      },
    },
    async (req, reply) => {
      await deleteQueue(ctx, req.principal, req.params.name);
      return reply.status(204).send();
    },
  );
}
