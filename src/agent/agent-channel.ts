/**
 * A `berth agent`'s channel to the server (channel-protocol.ts): dialled once the worker is
 * registered, kept open for the agent's life (a pilot's many jobs), dialled again after a drop
 * (a server restart, a new leader) with a growing pause. What comes over it is handed to
 * `onMessage`; what the agent sends while it is down is dropped — a session's end then reaches
 * the server as the channel's own close, which ends every session it carried.
 */
import { WebSocket, type RawData } from 'ws';
import { decodeToAgent, encode, type ToAgent, type ToServer } from './channel-protocol.js';
import { trustingAgent } from './trust.js';

export const CHANNEL_PATH = '/api/v1/agent/channel';

export interface ChannelOptions {
  /** The server's URL, as the agent reaches it. */
  url: string;
  workerId: number;
  rank: number;
  /** The channel credential the registration gave. */
  credential: string;
  /** Certificates trusted besides the built-in CAs (`--ca`). */
  ca?: string[];
  onMessage: (m: ToAgent) => void;
  log: (line: string) => void;
}

export interface AgentChannel {
  send(m: ToServer): void;
  /** Resolves once the channel is open, or after `ms` (whether it is open). */
  opened(ms: number): Promise<boolean>;
  close(): void;
}

/** The longest pause between two dials. */
const MAX_PAUSE_MS = 10_000;

export function openChannel(o: ChannelOptions): AgentChannel {
  const base = new URL(o.url.replace(/\/$/, '') + CHANNEL_PATH);
  base.protocol = base.protocol === 'https:' ? 'wss:' : 'ws:';
  base.searchParams.set('workerId', String(o.workerId));
  base.searchParams.set('rank', String(o.rank));
  let socket: WebSocket | undefined;
  let closed = false;
  let pause = 250;
  let timer: NodeJS.Timeout | undefined;
  const waiters = new Set<() => void>();
  let said = '';

  const dial = () => {
    timer = undefined;
    if (closed) return;
    const ws = new WebSocket(base, {
      headers: { authorization: `Bearer ${o.credential}` },
      ...(o.ca ? { agent: trustingAgent(o.ca) } : {}),
    });
    socket = ws;
    ws.on('open', () => {
      pause = 250;
      if (said) o.log('channel to the server open again');
      said = '';
      for (const w of waiters) w();
    });
    ws.on('message', (data: RawData, binary: boolean) => {
      const m = decodeToAgent(Buffer.isBuffer(data) ? data : Buffer.from(data as ArrayBuffer), binary);
      if (m) o.onMessage(m);
    });
    ws.on('unexpected-response', (_req, res) => {
      const why = `the server refused the channel (${res.statusCode ?? '?'})`;
      if (why !== said) o.log(`${(said = why)}; dialling again`);
      res.resume();
      ws.terminate();
    });
    ws.on('error', (e) => {
      const why = `channel to the server: ${e.message}`;
      if (why !== said) o.log(`${(said = why)}; dialling again`);
    });
    ws.on('close', () => {
      if (socket === ws) socket = undefined;
      if (closed || timer) return;
      timer = setTimeout(dial, pause);
      timer.unref();
      pause = Math.min(pause * 2, MAX_PAUSE_MS);
    });
  };
  dial();

  return {
    send(m) {
      if (socket?.readyState === WebSocket.OPEN) socket.send(encode(m));
    },
    opened(ms) {
      if (socket?.readyState === WebSocket.OPEN) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = () => {
          waiters.delete(done);
          clearTimeout(t);
          resolve(socket?.readyState === WebSocket.OPEN);
        };
        const t = setTimeout(done, ms);
        t.unref();
        waiters.add(done);
      });
    },
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      socket?.close(1000, 'the agent exits');
    },
  };
}
