/**
 * The agent host's `berth exec` sessions: each a command run inside a running member of a worker
 * (exec-process.ts), its input from the factory and its output and end sent back, over the host's
 * IPC channel.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { JobCgroup } from './cgroups.js';
import { startExec, type ExecProcess } from './exec-process.js';
import type { HostCommand, SessionCommand, SessionEvent } from './host-protocol.js';
import type { JobIdentity } from './identity.js';
import type { HeldTerminal, JobTerminal, TerminalClient } from './job-terminal.js';
import type { RunningJob } from './run-job.js';

/** A member as it runs: its process and environment, who it runs as, its groups. */
export interface RunningMember {
  running: RunningJob;
  identity?: JobIdentity;
  cgroup?: JobCgroup;
}

/** How long an exec waits for a member that has just started to have its process. */
const MEMBER_WAIT_MS = 10_000;

export class HostExecs {
  private readonly sessions = new Map<number, ExecProcess>();
  /** Input for sessions whose command is not running yet (null: its end). */
  private readonly pending = new Map<number, (Uint8Array | null)[]>();
  /** Sessions killed before their command ran. */
  private readonly killed = new Set<number>();

  constructor(private readonly send: (e: SessionEvent) => void) {}

  /**
   * Acts on a command about sessions (from the factory, or over a remote agent's channel):
   * `memberOf` finds the member an exec enters, `terminalOf` the terminal an attach takes.
   */
  handle(
    msg: SessionCommand,
    memberOf: (workerId: number, rank: number) => RunningMember | undefined,
    terminalOf: (workerId: number) => HeldTerminal | undefined,
  ): void {
    if (msg.type === 'exec') {
      // Only the job the session names: on a pilot the worker's next job may be another project's,
      // and a session asked for a job that has just ended must not land in it.
      const now = memberOf(msg.workerId, msg.rank)?.running.jobId ?? terminalOf(msg.workerId)?.jobId;
      if (now !== undefined && now !== msg.jobId)
        return this.send({
          type: 'exec-exit',
          session: msg.session,
          exitCode: null,
          signal: null,
          message: `job ${msg.jobId} has ended on worker ${msg.workerId}`,
        });
      // Asked again while a just-started job has no process yet.
      void this.start(
        msg,
        () => {
          const member = memberOf(msg.workerId, msg.rank);
          return member?.running.jobId === msg.jobId ? member : undefined;
        },
        () => {
          const held = terminalOf(msg.workerId);
          return held?.jobId === msg.jobId ? held.terminal : undefined;
        },
      );
    } else if (msg.type === 'exec-input') this.input(msg.session, msg.data);
    else if (msg.type === 'exec-kill') this.kill(msg.session);
    else if (msg.type === 'exec-resize') this.resize(msg.session, msg.cols, msg.rows);
    else this.flow(msg.session, msg.paused);
  }

  /** Starts session `cmd.session` in `member` (or attaches it to `terminal`), or says why it cannot. */
  async start(
    cmd: Extract<HostCommand, { type: 'exec' }>,
    memberOf: () => RunningMember | undefined,
    terminalOf: () => JobTerminal | undefined,
  ): Promise<void> {
    const { session } = cmd;
    const refuse = (message: string) =>
      this.send({ type: 'exec-exit', session, exitCode: null, signal: null, message });
    // Its input may come meanwhile: kept until the command runs.
    this.pending.set(session, []);
    if (cmd.attach) return this.attach(cmd.session, cmd.attach, terminalOf, refuse);
    // A job is running from its agent's start call, a moment before its process exists.
    const member = await this.soon(session, memberOf);
    const target = await member?.running.process.execTarget();
    const early = this.pending.get(session) ?? [];
    this.pending.delete(session);
    if (this.killed.delete(session)) {
      target?.release();
      return refuse('ended before it started');
    }
    if (!member)
      return refuse(`job ${cmd.jobId} (rank ${cmd.rank}) is not running on worker ${cmd.workerId}`);
    if (!target)
      return refuse(
        'the job runs without namespaces of its own (bubblewrap), or has just ended: there is nothing to enter',
      );
    let child: ExecProcess;
    try {
      child = startExec({
        target: target.fd,
        command: cmd.command,
        env: member.running.env,
        ...(member.identity ? { identity: member.identity } : {}),
        ...(member.cgroup ? { cgroup: member.cgroup } : {}),
        ...(cmd.tty ? { tty: cmd.tty } : {}),
        ...(cmd.forward !== undefined ? { forward: cmd.forward } : {}),
      });
    } catch (e) {
      target.release();
      return refuse((e as Error).message);
    }
    this.sessions.set(session, child);
    child.onOutput((stream, chunk) => this.send({ type: 'exec-output', session, stream, data: chunk }));
    for (const data of early) this.input(session, data);
    child.onExit((exitCode, signal) => {
      // Held until now: nsenter reads it by its number in this process (exec-process.ts).
      target.release();
      this.sessions.delete(session);
      this.send({ type: 'exec-exit', session, exitCode, signal });
    });
  }

  /** What `find` finds, waited for while the job has only just started (undefined: not in time). */
  private async soon<T>(session: number, find: () => T | undefined): Promise<T | undefined> {
    const deadline = Date.now() + MEMBER_WAIT_MS;
    let found = find();
    while (!found && Date.now() < deadline && !this.killed.has(session)) {
      await delay(10);
      found = find();
    }
    return found;
  }

  /**
   * `berth attach`: the session takes the interactive job's terminal, its output since a while
   * before first; its kill lets go of it (the job runs on). Told when another attach takes it over
   * or when the job ends (its exit code).
   */
  private async attach(
    session: number,
    size: { cols: number; rows: number },
    terminalOf: () => JobTerminal | undefined,
    refuse: (message: string) => void,
  ): Promise<void> {
    const terminal = await this.soon(session, terminalOf);
    const early = this.pending.get(session) ?? [];
    this.pending.delete(session);
    if (this.killed.delete(session)) return refuse('ended before it started');
    if (!terminal) return refuse('the job has no terminal here (it is not interactive, or has just ended)');
    const client: TerminalClient = {
      output: (data) => this.send({ type: 'exec-output', session, stream: 'stdout', data }),
      detached: (why) => {
        this.sessions.delete(session);
        this.send(
          typeof why === 'string'
            ? { type: 'exec-exit', session, exitCode: null, signal: null, message: why }
            : {
                type: 'exec-exit',
                session,
                exitCode: why.exitCode,
                signal: why.signal,
                ...(why.message ? { message: why.message } : {}),
              },
        );
      },
    };
    this.sessions.set(session, {
      write: (data) => terminal.input(client, data),
      // A client without input says so at once: the job's terminal must not end for it (a client
      // that wants the end of file types ^D, as berth run -i does when its input ends).
      end: () => {},
      resize: (cols, rows) => terminal.resize({ cols, rows }),
      pause: () => terminal.pause(`session ${session}`),
      resume: () => terminal.resume(`session ${session}`),
      kill: () => {
        terminal.resume(`session ${session}`);
        terminal.detach(client);
        this.sessions.delete(session);
        this.send({ type: 'exec-exit', session, exitCode: null, signal: null, message: 'detached' });
      },
      onOutput: () => {},
      onExit: () => {},
    });
    terminal.attach(client, size);
    for (const data of early) this.input(session, data);
  }

  input(session: number, data: Uint8Array | null): void {
    const waiting = this.pending.get(session);
    if (waiting) return void waiting.push(data);
    const child = this.sessions.get(session);
    if (data === null) child?.end();
    else child?.write(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  }

  flow(session: number, paused: boolean): void {
    const child = this.sessions.get(session);
    if (paused) child?.pause();
    else child?.resume();
  }

  resize(session: number, cols: number, rows: number): void {
    this.sessions.get(session)?.resize(cols, rows);
  }

  kill(session: number): void {
    if (this.pending.has(session)) this.killed.add(session);
    this.sessions.get(session)?.kill();
  }

  /** Ends every session (the host is going away). */
  killAll(): void {
    for (const session of this.sessions.keys()) this.kill(session);
  }
}
