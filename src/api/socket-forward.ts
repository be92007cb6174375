/**
 * A WebSocket session (exec, attach, port-forward) opened on a replica that does not lead, carried
 * to the leader, whose agent host holds the job: the follower opens the same request there — with
 * the client's token, and its address signed as forward.ts signs it — before it upgrades the
 * client's, so a refusal is still an ordinary answer (the leader's status and message); once both
 * are open, every frame goes through as it came, both ways, and a close of either closes the
 * other with its code and reason.
 */
import type { FastifyRequest } from 'fastify';
import { WebSocket, type RawData } from 'ws';
import { BerthError, UnavailableError, type ErrorCode } from '../domain/errors.js';
import type { ClusterView } from '../service/context.js';
import { CLIENT_ADDRESS, clientAddress, signAddress, signedRequest } from './client-address.js';
import { FORWARDED } from './forward.js';

/** The leader's URL when this replica does not lead and `req` was not forwarded here already. */
export function leaderFor(req: FastifyRequest, cluster: ClusterView | undefined): string | undefined {
  if (!cluster || cluster.role() === 'leader' || req.headers[FORWARDED]) return undefined;
  const leader = cluster.leaderUrl();
  if (!leader)
    throw new UnavailableError('no replica leads at the moment (an election is under way); try again', 2);
  return leader;
}

/** Opens `req`'s session on the leader at `leader`; rejects with the leader's refusal as it gave it. */
export function openOnLeader(req: FastifyRequest, cluster: ClusterView, leader: string): Promise<WebSocket> {
  const url = new URL(req.url, leader);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  const upstream = new WebSocket(url, {
    headers: {
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      [FORWARDED]: '1',
      [CLIENT_ADDRESS]: signAddress(cluster.secret, clientAddress(req, cluster.secret), signedRequest(req)),
    },
  });
  return new Promise((resolve, reject) => {
    upstream.once('open', () => resolve(upstream));
    upstream.once('unexpected-response', (_r, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => reject(refusal(res.statusCode ?? 503, refusalMessage(text))));
    });
    upstream.once('error', (e) =>
      reject(
        new UnavailableError(
          `this replica does not lead, and the leader (${leader}) cannot be reached: ${e.message}`,
          2,
        ),
      ),
    );
  });
}

const CODES: Record<number, ErrorCode> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  422: 'unprocessable',
  429: 'too_many_requests',
};

/** The leader's refusal, to be answered here as it was there (a failure of its own: 503). */
function refusal(status: number, message: string): BerthError {
  const code = CODES[status];
  return code
    ? new BerthError(code, status, message)
    : new UnavailableError(`the leader answered ${status}: ${message}`, 2);
}

/** The message of a berth error answer, or the text as it came. */
function refusalMessage(text: string): string {
  try {
    return (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
  } catch {
    return text;
  }
}

/** A close code a peer may send (1005, 1006 and 1015 are said, never sent). */
const sendable = (code: number) =>
  code === 1000 ||
  (code >= 3000 && code < 5000) ||
  (code >= 1001 && code <= 1014 && code !== 1005 && code !== 1006);

/** Carries frames between the client's socket and the leader's, until either closes. */
export function pipeSockets(client: WebSocket, upstream: WebSocket): void {
  const relay = (from: WebSocket, to: WebSocket) => {
    from.on('message', (data: RawData, isBinary: boolean) => {
      if (to.readyState === to.OPEN) to.send(data, { binary: isBinary });
    });
    from.on('close', (code: number, reason: Buffer) => {
      if (to.readyState === to.OPEN || to.readyState === to.CONNECTING)
        to.close(sendable(code) ? code : 1011, reason.toString());
    });
    from.on('error', () => to.terminate());
  };
  relay(client, upstream);
  relay(upstream, client);
}
