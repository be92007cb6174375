/**
 * The server's side of `berth exec` sessions: each a command an agent runs inside a running member
 * (agent/host-exec.ts) — the local factory's agent host over its IPC channel, or a remote agent
 * over its channel to the server (agent-channels.ts).
 */
import type { SessionCommand, SessionEvent } from '../agent/host-protocol.js';
import type { ExecListener, ExecRun, ExecSession } from './factory.js';

export class HostExecClient {
  private next = 1;
  private readonly listeners = new Map<number, ExecListener[]>();

  /**
   * `send` reaches the host (or a remote agent); false when it cannot (no host, or it has gone),
   * and a session then ends at once saying `unreachable`.
   */
  constructor(
    private readonly send: (cmd: SessionCommand) => boolean,
    private readonly unreachable = 'the agent host is not running',
  ) {}

  open(jobId: number, workerId: number, rank: number, run: ExecRun): ExecSession {
    const session = this.next++;
    const listeners: ExecListener[] = [];
    this.listeners.set(session, listeners);
    const what =
      'forward' in run
        ? { command: [], forward: run.forward }
        : 'attach' in run
          ? { command: [], attach: run.attach }
          : { command: run.command, ...(run.tty ? { tty: run.tty } : {}) };
    const started = this.send({ type: 'exec', session, jobId, workerId, rank, ...what });
    if (!started)
      queueMicrotask(() =>
        this.event({
          type: 'exec-exit',
          session,
          exitCode: null,
          signal: null,
          message: this.unreachable,
        }),
      );
    return {
      write: (data) => void this.send({ type: 'exec-input', session, data }),
      kill: () => void this.send({ type: 'exec-kill', session }),
      resize: ({ cols, rows }) => void this.send({ type: 'exec-resize', session, cols, rows }),
      flow: (paused) => void this.send({ type: 'exec-flow', session, paused }),
      on: (listener) => void listeners.push(listener),
    };
  }

  /** An event of a session, from the host. */
  event(e: SessionEvent): void {
    const listeners = this.listeners.get(e.session);
    if (!listeners) return;
    if (e.type === 'exec-output') {
      const data = Buffer.from(e.data.buffer, e.data.byteOffset, e.data.byteLength);
      for (const l of listeners) l({ type: 'output', stream: e.stream, data });
      return;
    }
    this.listeners.delete(e.session);
    for (const l of listeners)
      l({
        type: 'exit',
        exitCode: e.exitCode,
        signal: e.signal,
        ...(e.message ? { message: e.message } : {}),
      });
  }

  /** The host is gone: every session ends, saying so. */
  hostGone(why: string): void {
    for (const session of [...this.listeners.keys()])
      this.event({ type: 'exec-exit', session, exitCode: null, signal: null, message: why });
  }
}
