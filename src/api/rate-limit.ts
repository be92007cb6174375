/**
 * A rate limit per token on the API (@fastify/rate-limit): one client's flood is answered with
 * 429s before its body is read, each held until the token's window ends (a client that retries
 * at once, or keeps many requests in flight, then makes at most one refused request per
 * connection and window), so that it cannot starve the others. Counted per token in
 * fixed one-second windows, in this replica's memory (each replica limits what it serves).
 *
 * A job's token (BERTH_TOKEN: the job's code and its agent hold the same one) has a budget of its
 * own per job, `rateLimit.jobRequestsPerSecond`: job code is untrusted and may loop on the API or
 * on the upload of output. Its agent's lifeline — start, heartbeat, finish, which keep the server
 * from declaring the worker lost and end the job — is never limited: each is answered from memory
 * and a long poll holds at most a few slots a rank (long-poll-slots.ts). The agent waits out a 429
 * on output and artifacts (agent/http-post.ts), so a job that floods delays only its own output.
 * Public calls and requests without a token are not limited.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TooManyRequestsError } from '../domain/errors.js';
import { hashToken } from '../domain/tokens.js';

export interface RateLimitOptions {
  /** Requests per second one token of a person or a script may make; 0 turns the limit off. */
  requestsPerSecond: number;
  /** Requests per second one job's token may make (its agent's lifeline aside); 0: no limit. */
  jobRequestsPerSecond: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An agent's lifeline (start, heartbeat, finish): never rate-limited. */
    lifeline?: boolean;
  }
}

const bearer = (req: FastifyRequest): string | undefined =>
  /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];

const isJob = (req: FastifyRequest): boolean => req.principal?.kind === 'job';

/** Registers the limit; call after authentication's hook and before the routes. */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  if (opts.requestsPerSecond <= 0 && opts.jobRequestsPerSecond <= 0) return;
  const limitOf = (req: FastifyRequest) => (isJob(req) ? opts.jobRequestsPerSecond : opts.requestsPerSecond);
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: (req) => limitOf(req),
    timeWindow: 1000,
    // The hash, never the token itself, is kept as the key; a job's by the job.
    keyGenerator: (req) =>
      req.principal?.kind === 'job' ? `job:${req.principal.jobId}` : hashToken(bearer(req) ?? ''),
    allowList: (req) =>
      req.routeOptions.config.public === true ||
      !req.principal ||
      bearer(req) === undefined ||
      limitOf(req) <= 0 ||
      (isJob(req) && req.routeOptions.config.lifeline === true),
    addHeadersOnExceeding: {
      'x-ratelimit-limit': false,
      'x-ratelimit-remaining': false,
      'x-ratelimit-reset': false,
    },
    addHeaders: {
      'x-ratelimit-limit': true,
      'x-ratelimit-remaining': true,
      'x-ratelimit-reset': true,
      'retry-after': false,
    },
    errorResponseBuilder: (req, ctx) =>
      new TooManyRequestsError(
        isJob(req)
          ? `rate limit: more than ${ctx.max} requests per second with this job's token (the server's rateLimit.jobRequestsPerSecond); retry in ${ctx.after}`
          : `rate limit: more than ${ctx.max} requests per second with this token (the server's rateLimit.requestsPerSecond); retry in ${ctx.after}`,
        Math.max(1, Math.ceil(ctx.ttl / 1000)),
        ctx.ttl,
      ),
  });
}
