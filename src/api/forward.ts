/**
 * On a replica that does not lead, the requests only the leader's in-memory model can answer are
 * handed to the leader and its answer passed back, as Nomad's servers forward to theirs. A route
 * says which it is in its config:
 *
 * - `leader: 'only'` — the agent protocol, a queue's admission order: without a leader, 503 with
 *   Retry-After (an election takes at most the lease plus one renewal);
 * - `leader: 'prefer'` — a job or a page of jobs (for their live position and blockers), a
 *   cancel: without a reachable leader, answered here from the store (a cancel is recorded and
 *   the next leader acts on it).
 *
 * Everything else — every other read, every change of users, queues and projects, submissions —
 * is served by any replica from the store.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UnavailableError } from '../domain/errors.js';
import type { ClusterView, ServiceContext } from '../service/context.js';
import { CLIENT_ADDRESS, clientAddress, signAddress, signedRequest } from './client-address.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Whether a follower hands this route to the leader (see api/forward.ts). */
    leader?: 'only' | 'prefer';
  }
}

/** Marks a forwarded request, so that it is never forwarded again (leadership may have moved). */
export const FORWARDED = 'x-berth-forwarded';
/** Request headers not passed on: they describe this hop, not the request. */
const HOP = new Set(['host', 'connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'content-length']);
/** Response headers passed back. */
const PASS_BACK = ['content-type', 'x-total-count', 'x-next-cursor', 'retry-after', 'www-authenticate'];
/** How long a `prefer` request waits for the leader before it is answered here. */
const PREFER_TIMEOUT_MS = 3000;
/** How long an `only` request may take there (the heartbeat long poll waits up to a minute). */
const ONLY_TIMEOUT_MS = 120_000;

export function installForwarding(app: FastifyInstance, ctx: ServiceContext): void {
  app.addHook('onRequest', async (req, reply) => {
    const mode = req.routeOptions.config.leader;
    const cluster = ctx.cluster;
    if (!mode || !cluster || cluster.role() === 'leader' || req.headers[FORWARDED]) return;
    const leader = cluster.leaderUrl();
    if (leader) {
      try {
        await forward(req, reply, cluster, leader, mode === 'only' ? ONLY_TIMEOUT_MS : PREFER_TIMEOUT_MS);
        return reply;
      } catch (e) {
        if (reply.sent) throw e;
        req.log.warn({ err: e }, `could not reach the leader at ${leader}`);
      }
    }
    if (mode === 'only') {
      throw new UnavailableError(
        leader
          ? `this replica does not lead, and the leader (${leader}) cannot be reached; try again`
          : 'no replica leads at the moment (an election is under way); try again',
        2,
      );
    }
  });
}

async function forward(
  req: FastifyRequest,
  reply: FastifyReply,
  cluster: ClusterView,
  leader: string,
  timeoutMs: number,
): Promise<void> {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (v === undefined || HOP.has(k)) continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  }
  headers.set(FORWARDED, '1');
  // The leader records the client's address, not ours, in its audit rows (client-address.ts);
  // `set` replaces whatever copy of the header the client sent.
  headers.set(
    CLIENT_ADDRESS,
    signAddress(cluster.secret, clientAddress(req, cluster.secret), signedRequest(req)),
  );
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const res = await fetch(new URL(req.url, leader), {
    method: req.method,
    headers,
    ...(hasBody ? { body: Readable.toWeb(req.raw) as ReadableStream, duplex: 'half' } : {}),
    signal: AbortSignal.timeout(timeoutMs),
  });
  void reply.status(res.status);
  for (const h of PASS_BACK) {
    const v = res.headers.get(h);
    if (v !== null) void reply.header(h, v);
  }
  await reply.send(res.body ? Readable.fromWeb(res.body) : '');
}
