/**
 * A job's process tree on the agent's machine, and how the agent stops it and learns that it is
 * gone. One interface over the three ways a job runs here:
 *
 * - **in a sandbox** (sandbox.ts: namespaces of its own, as root, then the job's uid): the job's
 *   processes are the namespace's. A graceful stop signals the namespace's process group; the
 *   kill is a SIGKILL to its init, upon which the kernel kills every process in the namespace;
 *   and the job is gone when the kernel says so — its init has finished exiting, which it does
 *   only once every other process of the namespace is dead. No scan of /proc that a process could
 *   outrun decides it.
 * - **in cgroups** without a sandbox: a shell joins the job's groups, then becomes the command.
 * - **plain**: the command itself, in a process group of its own.
 *
 * Wrapped (the first two), the command is looked up by a shell running as the job's uid, as
 * execvp does, so a job learns nothing of directories it cannot read; the answer comes back on
 * a pipe of its own, closed before the command runs (a job that exits 127 is not "not found").
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync, constants as fsConstants } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { JOIN, joinArgv, type JobCgroup } from './cgroups.js';
import type { JobIdentity } from './identity.js';
import { killGroup } from './process-group.js';
import { sealedStdio } from './sealed-stdio.js';
import { INFO_FD, sandboxArgv, type ImageRoot, type SandboxSpec } from './sandbox.js';

export interface LaunchOptions {
  command: string[];
  workdir: string;
  env: NodeJS.ProcessEnv;
  identity?: JobIdentity;
  cgroup?: JobCgroup;
  sandbox?: SandboxSpec;
  /** In a sandbox only: the image whose filesystem is the job's root. */
  image?: ImageRoot;
  /**
   * The command was looked up already (in an image without /bin/sh, images/image-lookup.ts): it
   * is run directly, with no shell of the image's to look it up in.
   */
  lookedUp?: boolean;
  /**
   * In a sandbox only: an interactive job's terminal (job-terminal.ts), this descriptor of its
   * slave as the command's stdin, stdout and stderr, and its controlling terminal (sandbox.ts).
   */
  terminal?: number;
}

/** Why the command could not be run, as spawning it directly would say. */
export type NotRunnable = 'ENOENT' | 'EACCES';

/** The descriptor the look-up's answer comes back on. */
const LOOKUP_FD = 4;

/**
 * As execvp: a name with a slash is the file; else each entry of PATH (an empty one: the working
 * directory) in turn, a file found but not runnable reported only when no later one is. Run as
 * the job's uid, so `-x` and `-e` are the job's answers, not root's.
 */
const LOOKUP =
  'f=$1; r=ENOENT; ' +
  'case $f in ' +
  "'') ;; " +
  '*/*) if [ -f "$f" ] && [ -x "$f" ]; then r=; elif [ -e "$f" ]; then r=EACCES; fi ;; ' +
  '*) p=${PATH-/bin:/usr/bin}; while :; do d=${p%%:*}; [ -n "$d" ] || d=.; ' +
  'if [ -f "$d/$f" ] && [ -x "$d/$f" ]; then r=; break; elif [ -e "$d/$f" ]; then r=EACCES; fi; ' +
  '[ "$p" = "${p#*:}" ] && break; p=${p#*:}; done ;; ' +
  'esac; ' +
  `if [ -n "$r" ]; then printf %s "$r" >&${LOOKUP_FD}; exit 127; fi; exec ${LOOKUP_FD}>&-; exec "$@"`;

const lookupArgv = (command: string[]): string[] => ['/bin/sh', '-c', LOOKUP, 'berth-exec', ...command];

export class JobProcess {
  readonly child: ChildProcess;
  /** Why the command could not be run (wrapped only; else the spawn's error says it). */
  readonly notRunnable: Promise<NotRunnable | undefined>;
  /** The sandbox's init: its pid outside, and a descriptor of its /proc directory. */
  private init: { pid: number; proc: number } | undefined;
  private readonly initKnown: Promise<void>;

  private constructor(private readonly o: LaunchOptions) {
    if (o.image && !o.sandbox) throw new Error('a job runs in an image only in namespaces of its own');
    if (o.terminal !== undefined && !o.sandbox)
      throw new Error('a job has a terminal only in namespaces of its own');
    const wrapped = o.sandbox !== undefined || o.cgroup !== undefined;
    let argv: string[];
    if (o.sandbox) {
      const command = o.lookedUp ? o.command : lookupArgv(o.command);
      const sandboxed = sandboxArgv(o.sandbox, command, o.identity, o.image, o.terminal !== undefined);
      argv = o.cgroup ? joinArgv(o.cgroup, sandboxed) : sandboxed;
    } else if (o.cgroup)
      argv = ['/bin/sh', '-c', JOIN + LOOKUP, 'berth-cgroup', ...o.cgroup.dirs, '--', ...o.command];
    else argv = o.command;
    const stdio: Exclude<StdioOptions, string> =
      o.terminal === undefined ? ['ignore', 'pipe', 'pipe'] : [o.terminal, o.terminal, o.terminal];
    // No look-up to answer on its descriptor: none is opened, none left to the command.
    if (wrapped) stdio.push(o.sandbox ? 'pipe' : 'ignore', o.lookedUp ? 'ignore' : 'pipe');
    this.child = spawn(argv[0]!, argv.slice(1), {
      cwd: o.workdir,
      env: o.env,
      // In a sandbox, bubblewrap runs as root and setpriv drops to the uid inside it; else libuv
      // drops the supplementary groups, then sets the gid and the uid, before the exec.
      ...(o.identity && !o.sandbox ? { uid: o.identity.uid, gid: o.identity.gid } : {}),
      detached: true, // its own process group, so stopping it stops everything it started
      // Nothing of this process's but what is given: not another job's terminal (sealed-stdio.ts).
      stdio: sealedStdio(stdio),
    });
    this.notRunnable =
      wrapped && !o.lookedUp
        ? readAll(this.child.stdio[LOOKUP_FD]).then(notRunnable)
        : Promise.resolve(undefined);
    this.initKnown = o.sandbox ? this.readInit() : Promise.resolve();
  }

  static start(o: LaunchOptions): JobProcess {
    return new JobProcess(o);
  }

  /**
   * bubblewrap's `--info-fd` JSON names the init's pid outside the namespace; resolves once it has
   * (or the pipe ended without: bubblewrap failed before its namespace was made, nothing runs).
   */
  private readInit(): Promise<void> {
    const info = this.child.stdio[INFO_FD] as NodeJS.ReadableStream | null;
    if (!info) return Promise.resolve();
    return new Promise((resolve) => {
      let text = '';
      info.setEncoding('utf8');
      info.on('data', (chunk: string) => {
        text += chunk;
        const pid = Number((/"child-pid"\s*:\s*(\d+)/.exec(text) ?? [])[1]);
        if (!pid || this.init) return;
        try {
          // Held open, the directory stays this process's even if its number is reused later.
          this.init = { pid, proc: openSync(`/proc/${pid}`, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY) };
        } catch {
          // gone already: so is everything in its namespace
        }
        resolve();
      });
      for (const end of ['end', 'close', 'error']) info.on(end, () => resolve());
    });
  }

  /** The group a graceful stop signals: the namespace's (its init leads it), else the job's own. */
  terminate(): void {
    if (!this.o.sandbox) {
      if (this.child.pid) killGroup(this.child.pid, 'SIGTERM');
      return;
    }
    if (this.init) killGroup(this.init.pid, 'SIGTERM');
    // Not in its namespace yet: nothing of the job's command runs, so nothing needs a grace.
    else this.kill();
  }

  /**
   * The job's command, for `berth exec` to enter (exec-process.ts): a descriptor of its /proc
   * directory, held open so that it names this process whatever becomes of its number, until
   * `release`. It is the init's child (the command, in the image's root when it has one), checked
   * to be that child after it was opened: a number reused meanwhile is not taken for the job's.
   * Undefined once the job has ended, and without a sandbox. A job that has only just started
   * (its init not yet known, or not yet its command's parent) is waited for, up to `waitMs`.
   */
  async execTarget(waitMs = 10_000): Promise<{ fd: number; release: () => void } | undefined> {
    await this.initKnown;
    const deadline = Date.now() + waitMs;
    for (;;) {
      const target = this.commandDir();
      if (target || !this.alive() || Date.now() > deadline) return target;
      await delay(10);
    }
  }

  /** The command's /proc directory, opened and checked (see execTarget); undefined if not there. */
  private commandDir(): { fd: number; release: () => void } | undefined {
    const init = this.init;
    if (!init || !this.alive()) return undefined;
    let children: string[];
    try {
      children = readFileSync(`/proc/self/fd/${init.proc}/task/${init.pid}/children`, 'utf8')
        .trim()
        .split(/\s+/);
    } catch {
      return undefined;
    }
    for (const pid of children.filter((c) => /^\d+$/.test(c))) {
      let fd: number;
      try {
        fd = openSync(`/proc/${pid}`, fsConstants.O_RDONLY | fsConstants.O_DIRECTORY);
      } catch {
        continue;
      }
      let stat = '';
      try {
        stat = readFileSync(`/proc/self/fd/${fd}/stat`, 'utf8');
      } catch {
        // gone meanwhile
      }
      // Field 4, its parent's pid, after the command name (which may hold spaces and parentheses).
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === init.pid && this.inItsRoot(fd, init.proc)) return { fd, release: () => closeSync(fd) };
      closeSync(fd);
    }
    return undefined;
  }

  /**
   * Whether the init's child has entered the job's root. In an image that child is first
   * `unshare --root` (sandbox.ts), in the sandbox's root until it enters the image's: an exec that
   * entered it then would run in the host's files (seen under user-mode-linux, where that moment
   * lasts). Once in the image its root differs from the init's, and a job cannot change it again.
   */
  private inItsRoot(fd: number, initProc: number): boolean {
    if (!this.o.image) return true;
    try {
      const mine = statSync(`/proc/self/fd/${fd}/root`);
      const init = statSync(`/proc/self/fd/${initProc}/root`);
      return mine.dev !== init.dev || mine.ino !== init.ino;
    } catch {
      return false; // gone meanwhile
    }
  }

  /** Kills every process of the job: its namespace's init (the kernel kills the rest), its group. */
  kill(): void {
    if (this.init && this.alive()) killGroup(this.init.pid, 'SIGKILL');
    if (this.child.pid) killGroup(this.child.pid, 'SIGKILL');
  }

  /**
   * Whether the agent's child has ended, though Node may not have said so yet (a zombie until it
   * is reaped, gone after): the command has exited on its own, and a stop asked for now comes too
   * late to be why. In a sandbox the child is bubblewrap, which exits as soon as its init has
   * reaped the command. Read from the kernel, not from an event still queued behind the one that
   * asks for the stop.
   */
  exited(): boolean {
    const pid = this.child.pid;
    if (pid === undefined || this.child.exitCode !== null || this.child.signalCode !== null) return true;
    return !running(`/proc/${pid}/stat`);
  }

  /** Whether the init still runs (a zombie does not: the namespace is empty by then). */
  private alive(): boolean {
    return this.init !== undefined && running(`/proc/self/fd/${this.init.proc}/stat`);
  }

  /**
   * Resolves true once the kernel reports none of the job's processes left (in a sandbox: its
   * init has exited, which it does only after the rest), false if that took past `timeoutMs`.
   * Without a sandbox, what is left is the caller's to find (its uid, its cgroup).
   */
  async gone(timeoutMs = 5000): Promise<boolean> {
    if (!this.o.sandbox) return true;
    await this.initKnown;
    if (!this.init) return true;
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        if (!this.alive()) return true;
        if (Date.now() > deadline) return false;
        killGroup(this.init.pid, 'SIGKILL');
        await delay(5);
      }
    } finally {
      closeSync(this.init.proc);
      this.init = undefined;
    }
  }

  /**
   * How the command ended. In a sandbox bubblewrap's init reports a command killed by signal N as
   * exit status 128 + N, as a shell does; it is read back as the signal, as for a direct Slurm
   * worker's shell (factories/slurm/direct-run.ts).
   */
  status(code: number | null, signal: NodeJS.Signals | null): { exitCode: number; signal: string | null } {
    if (signal) return { exitCode: 128 + (osConstants.signals[signal] ?? 0), signal };
    const exitCode = code ?? 0;
    if (this.o.sandbox) return exitStatus(exitCode);
    return { exitCode, signal: null };
  }
}

/** Exit status `rc` of a shell-like parent: 128 + N is signal N. */
export function exitStatus(rc: number): { exitCode: number; signal: string | null } {
  const signal =
    rc > 128 ? Object.entries(osConstants.signals).find(([, n]) => n === rc - 128)?.[0] : undefined;
  return { exitCode: rc, signal: signal ?? null };
}

/** Whether the process whose `stat` file this is runs: it exists and is neither zombie nor dead. */
function running(statFile: string): boolean {
  try {
    const stat = readFileSync(statFile, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return false;
  }
}

/** A pipe's whole text (empty when there is none). */
function readAll(stream: unknown): Promise<string> {
  const s = stream as NodeJS.ReadableStream | null | undefined;
  if (!s) return Promise.resolve('');
  return new Promise((resolve) => {
    let text = '';
    s.setEncoding('utf8');
    s.on('data', (chunk: string) => (text += chunk));
    s.on('end', () => resolve(text));
    s.on('error', () => resolve(text));
    s.on('close', () => resolve(text));
  });
}

const notRunnable = (text: string): NotRunnable | undefined =>
  text === 'ENOENT' || text === 'EACCES' ? text : undefined;
