/**
 * The channels remote agents (`berth agent` on a Slurm node, a pilot) dial to the server
 * (agent/channel-protocol.ts), one per member of a running worker, and the `berth exec`, `attach`
 * and `port-forward` sessions carried over each: what the local factory does over its agent
 * host's IPC channel, for workers on other machines. A channel is taken only for a live worker of
 * its factory (checked by the controller and by the credential before it gets here); a newer one
 * for the same member replaces the older (an agent that reconnected), and a worker's destroy
 * closes its own. Whatever ends a channel ends the sessions it carried, saying why.
 */
import { decodeToServer, encode } from '../agent/channel-protocol.js';
import type { ChannelSocket, ExecRun, ExecSession, RemoteSessions } from './factory.js';
import { HostExecClient } from './host-execs.js';

interface Open {
  socket: ChannelSocket;
  sessions: HostExecClient;
}

const key = (workerId: number, rank: number) => `${workerId}/${rank}`;

export class AgentChannels implements RemoteSessions {
  private readonly open = new Map<string, Open>();

  connect(workerId: number, rank: number, socket: ChannelSocket): void {
    const k = key(workerId, rank);
    this.drop(k, 'replaced by a newer channel of the same agent');
    const sessions = new HostExecClient((cmd) => {
      socket.send(encode(cmd));
      return true;
    }, `the channel to worker ${workerId}'s agent is closed`);
    const entry = { socket, sessions };
    this.open.set(k, entry);
    socket.onMessage((data, binary) => {
      const e = decodeToServer(data, binary);
      if (e) return sessions.event(e);
      // Only a broken or hostile agent sends anything else (a replaced channel's frames go nowhere).
      if (this.open.get(k) === entry) this.drop(k, 'a frame that is not part of the channel protocol', 1008);
    });
    socket.onClose(() => {
      if (this.open.get(k) !== entry) return;
      this.open.delete(k);
      sessions.hostGone(
        `worker ${workerId}'s agent lost its channel to the server (its node or the network)`,
      );
    });
  }

  refusal(workerId: number, rank: number): string | undefined {
    if (this.open.has(key(workerId, rank))) return undefined;
    return `worker ${workerId}'s agent (rank ${rank}) has no channel to this server: it has not dialled it yet, lost it (it dials again), or is older than the server`;
  }

  exec(jobId: number, workerId: number, rank: number, run: ExecRun): ExecSession {
    const entry = this.open.get(key(workerId, rank));
    // Refused before (refusal()), unless the channel closed in between: a session that ends at once.
    const sessions = entry?.sessions ?? new HostExecClient(() => false, this.refusal(workerId, rank));
    return sessions.open(jobId, workerId, rank, run);
  }

  /** Closes every channel of worker `workerId` (destroyed): its sessions end. */
  forget(workerId: number): void {
    for (const k of [...this.open.keys()])
      if (k.startsWith(`${workerId}/`)) this.drop(k, `worker ${workerId} is gone`);
  }

  close(): void {
    for (const k of [...this.open.keys()]) this.drop(k, 'the server is stopping', 1001);
  }

  private drop(k: string, why: string, code = 1000): void {
    const entry = this.open.get(k);
    if (!entry) return;
    this.open.delete(k);
    entry.sessions.hostGone(why);
    entry.socket.close(code, why);
  }
}
