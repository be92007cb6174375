/**
 * A rate limit per token on the API (@fastify/rate-limit): one client's flood is answered with
 * 429s before its body is read, each held until the token's window ends (a client that retries
 * at once, or keeps many requests in flight, then makes at most one refused request per
 * connection and window), so that it cannot starve the others. Counted per token in
 * fixed one-second windows, in this replica's memory (each replica limits what it serves).
 * Agents (job tokens), public calls and requests without a token are not limited: an agent's
 * heartbeats and output must never be refused for its user's other traffic.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { TooManyRequestsError } from '../domain/errors.js';
import { hashToken } from '../domain/tokens.js';

export interface RateLimitOptions {
  /** Requests per second one token may make; 0 turns the limit off. */
  requestsPerSecond: number;
}

const bearer = (req: FastifyRequest): string | undefined =>
  /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];

/** Registers the limit; call after authentication's hook and before the routes. */
export async function installRateLimit(app: FastifyInstance, opts: RateLimitOptions): Promise<void> {
  if (opts.requestsPerSecond <= 0) return;
  await app.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    max: opts.requestsPerSecond,
    timeWindow: 1000,
    // The hash, never the token itself, is kept as the key.
    keyGenerator: (req) => hashToken(bearer(req) ?? ''),
    allowList: (req) =>
      req.routeOptions.config.public === true ||
      !req.principal ||
      req.principal.kind === 'job' ||
      bearer(req) === undefined,
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
    errorResponseBuilder: (_req, ctx) =>
      new TooManyRequestsError(
        `rate limit: more than ${ctx.max} requests per second with this token (the server's rateLimit.requestsPerSecond); retry in ${ctx.after}`,
        Math.max(1, Math.ceil(ctx.ttl / 1000)),
        ctx.ttl,
      ),
  });
}
