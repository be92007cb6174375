/**
 * An interactive job's terminal (`berth run -it`, `berth attach`): a pseudo-terminal whose slave
 * is the job's stdin, stdout and stderr (its controlling terminal, sandbox.ts's `setsid --ctty`),
 * and whose master the agent holds for as long as the job runs — so the job outlives a dropped
 * connection, and a later attach takes the same terminal back.
 *
 * What the job writes goes to its log, always, and to the attached client, if any; the last
 * REPLAY_BYTES of it are kept and shown to a client that attaches, as it last was. One client is
 * attached at a time: a newer attach takes the terminal over, and the older is told so.
 *
 * The job's command starts once a first client is attached (or never: the job ends after the
 * detach grace without one), so nothing it says before is missed and it starts at that client's
 * size. The terminal is said to be idle when neither its input nor its output has moved: a
 * keep-alive of the connection is neither, so it cannot hold an idle job (Kubernetes #102569).
 */
import { Pty } from './pty.js';

/** How much of the job's latest output a client that attaches is shown first. */
export const REPLAY_BYTES = 64 * 1024;

/** Who is attached: where the job's output goes, and how it is told it was let go. */
export interface TerminalClient {
  output(data: Buffer): void;
  /** Let go: another client attached (`why`), or the job ended (`exit`). */
  detached(why: string | { exitCode: number | null; signal: string | null; message?: string }): void;
}

export interface TerminalTimes {
  /** With no client attached this long (none yet, or since the last left), the job ends. */
  detachGraceMs: number;
  /** With no input and no output this long, the job ends; a warning comes before. */
  idleMs: number;
}

export class JobTerminal {
  private readonly pty: Pty;
  private client: TerminalClient | undefined;
  private replay: Buffer[] = [];
  private replayBytes = 0;
  private lastMoved = Date.now();
  private readonly firstClient: Promise<boolean>;
  private gotFirst: (attached: boolean) => void = () => {};
  private graceTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private warned = false;
  private ended = false;
  private readonly outputFns: ((data: Buffer) => void)[] = [];
  /** Who holds the job's output back (its log's uploads, the client): read again when none does. */
  private readonly holds = new Set<string>();

  constructor(
    size: { cols: number; rows: number },
    private readonly times: TerminalTimes,
    /** The job must end: no client for the grace, or idle (`why` says which). */
    private readonly endJob: (why: string) => void,
  ) {
    this.pty = new Pty(size, (d) => this.fromJob(d));
    this.firstClient = new Promise((resolve) => (this.gotFirst = resolve));
    this.armGrace();
  }

  /** The slave's descriptor, for the job's stdio (undefined once the job has it). */
  get slave(): number | undefined {
    return this.pty.slave;
  }

  /** Called with everything the job writes (its log). */
  onOutput(fn: (data: Buffer) => void): void {
    this.outputFns.push(fn);
  }

  /** Resolves once everything the job wrote has been read (its side is closed). */
  drained(): Promise<void> {
    return this.pty.drained();
  }

  /** Resolves true once a first client has attached; false if the grace passed without one. */
  waitForClient(): Promise<boolean> {
    return this.firstClient;
  }

  /** The job has its copy of the slave: ours is closed, so the job's end closes the terminal. */
  spawned(): void {
    this.pty.handedOver();
    this.moved();
  }

  /** Attaches `client` (at `size`), letting go of the one attached before; shows it the replay. */
  attach(client: TerminalClient, size: { cols: number; rows: number }): void {
    if (this.ended) return client.detached('the job has ended');
    const before = this.client;
    this.client = client;
    before?.detached('attached elsewhere: another `berth attach` took this terminal');
    clearTimeout(this.graceTimer);
    this.resize(size);
    for (const chunk of this.replay) client.output(chunk);
    this.gotFirst(true);
  }

  /** Lets go of `client` (its connection went away): the job runs on for the grace. */
  detach(client: TerminalClient): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.armGrace();
  }

  input(client: TerminalClient, data: Buffer): void {
    if (this.client !== client || this.ended) return;
    this.moved();
    this.pty.write(data);
  }

  resize(size: { cols: number; rows: number }): void {
    this.pty.resize(size.cols, size.rows);
  }

  /** Holds the job's output back for `who` (the job then waits on its full terminal). */
  pause(who = 'log'): void {
    this.holds.add(who);
    this.pty.pause();
  }

  resume(who = 'log'): void {
    this.holds.delete(who);
    if (this.holds.size === 0) this.pty.resume();
  }

  /**
   * Hangs the terminal up, as a modem's line drop or a closed ssh does: the kernel sends SIGHUP to
   * the job's session, which ends a shell and what it runs. What the job writes after is lost.
   */
  hangUp(): void {
    this.pty.close();
  }

  /** The job has ended: the client is told how, and the master is closed. */
  end(how: { exitCode: number | null; signal: string | null; message?: string }): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.graceTimer);
    clearTimeout(this.idleTimer);
    this.gotFirst(false);
    this.client?.detached(how);
    this.client = undefined;
    this.pty.close();
  }

  /** Says `text` to the attached client and in the log, as the server's words, not the job's. */
  say(text: string): void {
    const line = Buffer.from(`\r\n[berth] ${text}\r\n`);
    for (const fn of this.outputFns) fn(line);
    this.client?.output(line);
  }

  private fromJob(data: Buffer): void {
    this.moved();
    for (const fn of this.outputFns) fn(data);
    this.client?.output(data);
    this.replay.push(data);
    this.replayBytes += data.length;
    while (this.replayBytes - this.replay[0]!.length >= REPLAY_BYTES)
      this.replayBytes -= this.replay.shift()!.length;
  }

  private armGrace(): void {
    clearTimeout(this.graceTimer);
    if (this.ended) return;
    this.graceTimer = setTimeout(() => {
      this.gotFirst(false);
      this.endJob(`no terminal attached for ${span(this.times.detachGraceMs)} (interactive.detachGrace)`);
    }, this.times.detachGraceMs);
  }

  /** Input or output moved: the idle clock starts again (its timer is re-armed lazily). */
  private moved(): void {
    this.lastMoved = Date.now();
    this.warned = false;
    if (!this.idleTimer && !this.ended) this.idleTimer = setTimeout(() => this.idleCheck(), this.warnAfter());
  }

  /** The warning comes a tenth of the idle time before the end, at most a minute before. */
  private warnAfter(): number {
    return this.times.idleMs - Math.min(60_000, this.times.idleMs / 10);
  }

  private idleCheck(): void {
    this.idleTimer = undefined;
    if (this.ended) return;
    const idle = Date.now() - this.lastMoved;
    if (idle < this.warnAfter()) {
      this.idleTimer = setTimeout(() => this.idleCheck(), this.warnAfter() - idle);
      return;
    }
    if (idle >= this.times.idleMs) {
      const why = `no input or output for ${span(this.times.idleMs)} (interactive.idleTimeout)`;
      this.say(`${why}: this job ends now`);
      this.endJob(why);
      return;
    }
    if (!this.warned) {
      this.warned = true;
      // The server's own words (say) do not reset the idle clock: only the job's output and input do.
      this.say(
        `idle for ${span(idle)}: this job ends in ${span(this.times.idleMs - idle)} unless there is input or output (interactive.idleTimeout)`,
      );
    }
    this.idleTimer = setTimeout(() => this.idleCheck(), this.times.idleMs - idle);
  }
}

/**
 * `90000` → `1m30s`; whole seconds, as a person reads a duration (domain/duration.ts's formatSpan
 * says the same, but the agent imports nothing of the domain: docs/ARCHITECTURE.md's layers).
 */
function span(ms: number): string {
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return [h ? `${h}h` : '', m ? `${m}m` : '', rest || (!h && !m) ? `${rest}s` : ''].join('');
}

/** An interactive job's terminal as its agent holds it, with the job it belongs to (what an attach names). */
export interface HeldTerminal {
  terminal: JobTerminal;
  jobId: number;
}
