import { BadRequestError } from '../../domain/errors.js';
import { JOB_STATES, type JobState } from '../../domain/job.js';
import { running, type ServiceContext } from '../../service/context.js';
import type { CredentialWatch } from '../../service/tenancy/credential-watch.js';
import { bearerToken } from '../bearer.js';
import { cancelJob, getJob, jobEvents, listJobs } from '../../service/jobs/jobs.js';
import { submitJob } from '../../service/jobs/submit-job.js';
import { jobAttempts, jobLogs } from '../../service/jobs/job-attempts.js';
import { JobListQuery, JobParams, LogsQuery, ProjectJobsParams, SubmitBody } from '../job-schemas.js';
import type { Router } from './types.js';

function parseStates(text: string | undefined): JobState[] | undefined {
  if (!text) return undefined;
  return text.split(',').map((s) => {
    const state = s.trim() as JobState;
    if (!JOB_STATES.includes(state))
      throw new BadRequestError(`state: "${s}" is not one of ${JOB_STATES.join(', ')}`);
    return state;
  });
}

export async function jobRoutes(
  api: Router,
  ctx: ServiceContext,
  credentials: CredentialWatch,
): Promise<void> {
  const tags = ['jobs'];
  api.post(
    '/projects/:name/jobs',
    {
      schema: {
        tags,
        summary: 'Submit a job (member); the same idempotencyKey returns the same job',
        params: ProjectJobsParams,
        body: SubmitBody,
      },
    },
    async (req, reply) => {
      const { job, created } = await submitJob(running(ctx), req.principal, req.params.name, req.body);
      return reply.status(created ? 201 : 200).send(job);
    },
  );
  api.get(
    '/projects/:name/jobs',
    {
      config: { leader: 'prefer' },
      schema: {
        tags,
        summary:
          "A project's jobs, a page at a time: X-Total-Count says how many match the state filter, X-Next-Cursor where the next page starts (absent on the last)",
        params: ProjectJobsParams,
        querystring: JobListQuery,
      },
    },
    async (req, reply) => {
      const list = await listJobs(ctx, req.principal, req.params.name, {
        states: parseStates(req.query.state),
        sort: req.query.sort,
        cursor: req.query.cursor,
        before: req.query.before,
        limit: req.query.limit,
        collapse: req.query.collapse,
        array: req.query.array,
      });
      void reply.header('x-total-count', String(list.total));
      if (list.nextCursor !== undefined) void reply.header('x-next-cursor', list.nextCursor);
      return list.jobs;
    },
  );
  api.get(
    '/jobs/:id',
    {
      config: { leader: 'prefer' },
      schema: { tags, summary: 'A job, with why it waits', params: JobParams },
    },
    async (req) => getJob(ctx, req.principal, req.params.id),
  );
  api.post(
    '/jobs/:id/cancel',
    { config: { leader: 'prefer' }, schema: { tags, summary: 'Cancel a job (member)', params: JobParams } },
    async (req) => cancelJob(ctx, req.principal, req.params.id),
  );
  api.get(
    '/jobs/:id/events',
    { schema: { tags, summary: "A job's timeline", params: JobParams } },
    async (req) => jobEvents(ctx, req.principal, req.params.id),
  );
  api.get(
    '/jobs/:id/attempts',
    {
      schema: {
        tags,
        summary:
          "A job's attempts: each that ended and was followed by another (evicted and requeued, or failed and retried), then the current or last",
        params: JobParams,
      },
    },
    async (req) => jobAttempts(ctx, req.principal, req.params.id),
  );
  api.get(
    '/jobs/:id/logs',
    {
      schema: {
        tags,
        summary:
          "Output (every attempt's); with attempt=K only that attempt's; with follow=true, streamed until the job ends",
        params: JobParams,
        querystring: LogsQuery,
      },
    },
    async (req, reply) => {
      const follow = req.query.follow ?? false;
      const stream = await jobLogs(running(ctx), req.principal, req.params.id, follow, req.query.attempt);
      // Node holds the headers back until the first output, which a quiet job may not print for
      // hours: send them at once, so a client can tell a quiet job from a dead server. Fastify
      // sets them on the response just before it pipes the stream into it.
      if (follow) {
        reply.raw.once('pipe', () => reply.raw.flushHeaders());
        const closed = ctx.metrics?.streamOpened('logs');
        if (closed) reply.raw.once('close', closed);
        // A follow ends with its token (revoked, expired, its user deleted), not only with the job.
        const stop = await credentials.watch(
          bearerToken(req.headers.authorization) ?? '',
          req.principal,
          () => {
            stream.destroy();
            reply.raw.end();
          },
        );
        reply.raw.once('close', stop);
      }
      return reply
        .header('content-type', 'text/plain; charset=utf-8')
        .header('cache-control', 'no-cache')
        .send(stream);
    },
  );
}
