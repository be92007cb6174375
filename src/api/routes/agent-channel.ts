/**
 * `GET /agent/channel?workerId=W&rank=R`, upgraded to a WebSocket: a remote agent's channel to the
 * server (agent/channel-protocol.ts), over which `berth exec`, `attach` and `port-forward` reach
 * its running job. Its bearer is the channel credential the agent's registration gave
 * (service/cluster/agent-channel.ts), checked before the upgrade with the worker's liveness, so a
 * refusal is an ordinary answer (401, 409). On a replica that does not lead, it is carried to the
 * leader, whose factory holds the worker (socket-forward.ts). The server pings it every 20 s and
 * drops one that has not answered since the ping before: a node that vanished ends its sessions.
 */
import type { WebSocket } from 'ws';
import type { ChannelSocket } from '../../service/cluster/agent-channel.js';
import { openChannel } from '../../service/cluster/agent-channel.js';
import { running, type ServiceContext } from '../../service/context.js';
import { ChannelQuery } from '../job-schemas.js';
import { leaderFor, openOnLeader, pipeSockets } from '../socket-forward.js';
import type { Router } from './types.js';
import { bearer } from './agent.js';

const PING_MS = 20_000;

/** What each upgrade request was allowed, checked before its upgrade. */
const allowed = new WeakMap<object, (socket: ChannelSocket) => void>();
/** On a replica that does not lead: each request's channel, opened on the leader already. */
const onLeader = new WeakMap<object, WebSocket>();

export function agentChannelRoute(api: Router, ctx: ServiceContext): void {
  api.get(
    '/agent/channel',
    {
      websocket: true,
      // Its bearer is the channel credential (from the agent's registration), checked by the service.
      config: { public: true },
      schema: {
        tags: ['agent'],
        summary:
          "A remote agent's channel to the server, over a WebSocket, which carries berth exec, attach and port-forward into its job. Its bearer is the channel credential its registration gave",
        security: [],
        querystring: ChannelQuery,
      },
      preHandler: async (req) => {
        const credential = bearer(req.headers.authorization);
        const leader = leaderFor(req, ctx.cluster);
        if (leader) return void onLeader.set(req, await openOnLeader(req, ctx.cluster!, leader));
        const { workerId, rank = 0 } = req.query;
        allowed.set(req, await openChannel(running(ctx), workerId, rank, credential));
      },
    },
    (socket: WebSocket, req) => {
      const closed = ctx.metrics?.streamOpened('agent');
      if (closed) socket.once('close', closed);
      const upstream = onLeader.get(req);
      if (upstream) return pipeSockets(socket, upstream);
      const take = allowed.get(req);
      if (!take) return socket.close(1011, 'no channel');
      try {
        take(adapt(socket));
      } catch (e) {
        // The worker went between the check and the upgrade.
        socket.close(
          1011,
          Buffer.from((e as Error).message)
            .subarray(0, 110)
            .toString(),
        );
      }
    },
  );
}

/** The channels' view of a WebSocket, kept alive by pings. */
function adapt(socket: WebSocket): ChannelSocket {
  let answered = true;
  socket.on('pong', () => (answered = true));
  const ping = setInterval(() => {
    if (!answered) return socket.terminate();
    answered = false;
    socket.ping();
  }, PING_MS);
  ping.unref();
  socket.on('close', () => clearInterval(ping));
  return {
    send: (frame) => {
      if (socket.readyState === socket.OPEN) socket.send(frame, { binary: typeof frame !== 'string' });
    },
    close: (code, reason) => socket.close(code, reason),
    onMessage: (listener) => socket.on('message', (data: Buffer, binary: boolean) => listener(data, binary)),
    onClose: (listener) => socket.on('close', listener),
  };
}
