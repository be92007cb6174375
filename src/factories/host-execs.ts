/**
 * The local factory's side of `berth exec` sessions: each a command its agent host runs inside a
 * running member (agent/host-exec.ts), over the host's IPC channel.
 */
import type { HostCommand, HostEvent } from '../agent/host-protocol.js';
import type { ExecListener, ExecRun, ExecSession } from './factory.js';

type ExecEvent = Extract<HostEvent, { type: 'exec-output' | 'exec-exit' }>;

export class HostExecClient {
  private next = 1;
  private readonly listeners = new Map<number, ExecListener[]>();

  /** `send` reaches the host; false when it cannot (no host, or it has gone). */
  constructor(private readonly send: (cmd: HostCommand) => boolean) {}

  open(workerId: number, rank: number, run: ExecRun): ExecSession {
    const session = this.next++;
    const listeners: ExecListener[] = [];
    this.listeners.set(session, listeners);
    const what =
      'forward' in run
        ? { command: [], forward: run.forward }
        : 'attach' in run
          ? { command: [], attach: run.attach }
          : { command: run.command, ...(run.tty ? { tty: run.tty } : {}) };
    const started = this.send({ type: 'exec', session, workerId, rank, ...what });
    if (!started)
      queueMicrotask(() =>
        this.event({
          type: 'exec-exit',
          session,
          exitCode: null,
          signal: null,
          message: 'the agent host is not running',
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
  event(e: ExecEvent): void {
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
