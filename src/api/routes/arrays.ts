/** Job arrays (`array` in a submission): one read, a task by index, and cancelling all tasks. */
import type { ServiceContext } from '../../service/context.js';
import { arrayTask, cancelArray, getArray } from '../../service/jobs/job-arrays.js';
import { ArrayParams, ArrayTaskParams } from '../job-schemas.js';
import type { Router } from './types.js';

export async function arrayRoutes(api: Router, ctx: ServiceContext): Promise<void> {
  const tags = ['jobs'];
  api.get(
    '/arrays/:id',
    {
      config: { leader: 'prefer' },
      schema: {
        tags,
        summary:
          "A job array: its indices and throttle as submitted, its size, its tasks' counts by state, its state, and its first task",
        params: ArrayParams,
      },
    },
    async (req) => getArray(ctx, req.principal, req.params.id),
  );
  api.get(
    '/arrays/:id/tasks/:index',
    {
      config: { leader: 'prefer' },
      schema: { tags, summary: 'One task of a job array, by its index, as a job', params: ArrayTaskParams },
    },
    async (req) => arrayTask(ctx, req.principal, req.params.id, req.params.index),
  );
  api.post(
    '/arrays/:id/cancel',
    {
      config: { leader: 'prefer' },
      schema: { tags, summary: 'Cancel every unfinished task of a job array (member)', params: ArrayParams },
    },
    async (req) => cancelArray(ctx, req.principal, req.params.id),
  );
}
