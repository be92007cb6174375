/**
 * `berth exec`: a command run inside a running job (docs/SECURITY.md, "Exec"), as the job's own
 * processes run — in its namespaces (mount, pid, ipc: its /tmp, /dev, process view, and its image's
 * root when it has one), its working directory, its cgroups, under its uid, with its environment.
 *
 * util-linux's `nsenter` enters them, given the job's command's /proc directory as a descriptor
 * (job-process.ts's `execTarget`: held open, it names that process whatever becomes of its number):
 * every namespace file, the root and the working directory are opened from it before nsenter joins
 * any, and it drops to the job's uid (its supplementary groups cleared) before the command is
 * looked up — inside the job's root, which is the job's to change, so nothing is run there as
 * root. `setpriv --no-new-privs` first, as bubblewrap gives the job's own processes: a set-uid
 * file in an image gains nothing. The groups are joined first of all (cgroups.ts's JOIN), so what
 * the command uses counts against the job.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import { joinArgv, type JobCgroup } from './cgroups.js';
import type { JobIdentity } from './identity.js';
import { killGroup } from './process-group.js';
import { Pty } from './pty.js';
import { SETSID } from './sandbox.js';
import { sealedStdio } from './sealed-stdio.js';

export const NSENTER = '/usr/bin/nsenter';
export const SETPRIV = '/usr/bin/setpriv';

export interface ExecOptions {
  /**
   * A descriptor of the job's command's /proc directory (job-process.ts's `execTarget`), in this
   * process, which keeps it open while the command runs: nsenter reads it as /proc/PID/fd/N.
   */
  target: number;
  command: string[];
  env: NodeJS.ProcessEnv;
  identity?: JobIdentity;
  cgroup?: JobCgroup;
  /** A terminal of its own (pty.ts), this size, instead of pipes: `berth exec -t`. */
  tty?: { cols: number; rows: number };
  /**
   * `berth port-forward`: instead of `command`, a relay between its stdin and stdout and this TCP
   * port on the loopback of the job's network namespace (`relayArgv`).
   */
  forward?: number;
}

/** A command running inside a job: its input, its output, its end. */
export interface ExecProcess {
  write(data: Buffer): void;
  /** Closes its input (with a terminal: end of file, as ^D). */
  end(): void;
  resize(cols: number, rows: number): void;
  /** Stops reading its output (the client is behind), then starts again: it waits on a full pipe meanwhile. */
  pause(): void;
  resume(): void;
  /** SIGKILL to its process group. */
  kill(): void;
  onOutput(fn: (stream: 'stdout' | 'stderr', data: Buffer) => void): void;
  onExit(fn: (exitCode: number, signal: string | null) => void): void;
}

/**
 * A relay between stdin/stdout and 127.0.0.1:PORT: this Node (the server's own, from the host's
 * files: the job's image has none), run under the job's uid in the job's network namespace alone
 * (its loopback, its ports; `network: none` gives a job one of its own). A refused connection is
 * said on stderr and ends it with 1.
 */
const RELAY =
  "const s=require('net').connect(Number(process.argv[1]),'127.0.0.1');" +
  "s.on('connect',()=>{process.stdin.pipe(s);s.pipe(process.stdout)});" +
  "s.on('error',(e)=>{process.stderr.write(e.code==='ECONNREFUSED'?'nothing listens on port '+process.argv[1]+' in the job':e.message);process.exit(1)});" +
  "s.on('close',()=>process.exit(0));";

/** The argv of a relay to `port` in the job whose process's /proc directory is at `proc`. Pure. */
export function relayArgv(o: Pick<ExecOptions, 'identity' | 'cgroup'>, port: number, proc: string): string[] {
  const argv = [
    SETPRIV,
    '--no-new-privs',
    NSENTER,
    `--net=${proc}/ns/net`,
    ...(o.identity ? [`--setuid=${o.identity.uid}`, `--setgid=${o.identity.gid}`] : []),
    '--',
    process.execPath,
    '-e',
    RELAY,
    String(port),
  ];
  return o.cgroup ? joinArgv(o.cgroup, argv) : argv;
}

/** The namespace files nsenter's options name (`--mount` is the job's `ns/mnt`). */
const NS_FILE = { mount: 'mnt', pid: 'pid', ipc: 'ipc' } as const;

/**
 * nsenter into namespaces `ns` of the process at `proc`, its root and working directory, as the
 * job's uid, then `command`: the drop comes before the command is looked up.
 */
function enter(o: Omit<ExecOptions, 'target' | 'tty'>, proc: string, ns: (keyof typeof NS_FILE)[]): string[] {
  return [
    NSENTER,
    ...ns.map((n) => `--${n}=${proc}/ns/${NS_FILE[n]}`),
    `--root=${proc}/root`,
    `--wd=${proc}/cwd`,
    ...(o.identity ? [`--setuid=${o.identity.uid}`, `--setgid=${o.identity.gid}`] : []),
    '--',
    ...o.command,
  ];
}

/** The argv that runs `command` inside the job whose process's /proc directory is at `proc`. Pure. */
export function execArgv(o: Omit<ExecOptions, 'target' | 'tty'>, proc: string): string[] {
  const argv = [SETPRIV, '--no-new-privs', ...enter(o, proc, ['mount', 'pid', 'ipc'])];
  return o.cgroup ? joinArgv(o.cgroup, argv) : argv;
}

/**
 * The argv that runs `command` inside the job on a terminal of its own: as execArgv, in two steps,
 * so that the command leads a session inside the job's pid namespace with the terminal as its
 * controlling one (a shell's job control, ^C to what runs in its foreground). The first nsenter
 * enters the pid namespace alone and forks into it; there util-linux's setsid — the host's, as
 * the mount namespace is still the host's — makes the session and takes the terminal; then the
 * second enters the rest and drops to the job's uid before the command is looked up. Pure.
 */
export function terminalExecArgv(o: Omit<ExecOptions, 'target' | 'tty'>, proc: string): string[] {
  const argv = [
    SETPRIV,
    '--no-new-privs',
    NSENTER,
    `--pid=${proc}/ns/pid`,
    '--',
    SETSID,
    '--ctty',
    ...enter(o, proc, ['mount', 'ipc']),
  ];
  return o.cgroup ? joinArgv(o.cgroup, argv) : argv;
}

/**
 * Starts the command, leading a process group of its own (so a kill reaches what it started,
 * unless that left the group: it is still the job's, and ends with it at the latest): with pipes
 * for its stdin, stdout and stderr, or with a terminal for all three (`tty`).
 */
export function startExec(o: ExecOptions): ExecProcess {
  const proc = `/proc/${process.pid}/fd/${o.target}`;
  if (o.forward !== undefined) return withPipes(relayArgv(o, o.forward, proc), { PATH: '/usr/bin:/bin' });
  return o.tty ? withTerminal(terminalExecArgv(o, proc), o.env, o.tty) : withPipes(execArgv(o, proc), o.env);
}

function withPipes(argv: string[], env: NodeJS.ProcessEnv): ExecProcess {
  // Nothing of this process's but its pipes: not another job's terminal (sealed-stdio.ts).
  const child = spawn(argv[0]!, argv.slice(1), {
    env,
    stdio: sealedStdio(['pipe', 'pipe', 'pipe']),
    detached: true,
  }) as ChildProcessWithoutNullStreams;
  // Its stdin may close first (a command that reads none): what is written after is dropped.
  child.stdin.on('error', () => {});
  let exitFn: (exitCode: number, signal: string | null) => void = () => {};
  let ended = false;
  const exit = (exitCode: number, signal: string | null) => {
    if (ended) return;
    ended = true;
    exitFn(exitCode, signal);
  };
  child.once('error', () => exit(127, null));
  child.once('close', (code, signal) =>
    exit(code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0), signal),
  );
  return {
    write: (data) => void (child.stdin.destroyed || child.stdin.write(data)),
    end: () => child.stdin.end(),
    resize: () => {},
    pause: () => {
      child.stdout.pause();
      child.stderr.pause();
    },
    resume: () => {
      child.stdout.resume();
      child.stderr.resume();
    },
    kill: () => {
      if (child.pid) killGroup(child.pid, 'SIGKILL');
    },
    onOutput: (fn) => {
      child.stdout.on('data', (d: Buffer) => fn('stdout', d));
      child.stderr.on('data', (d: Buffer) => fn('stderr', d));
    },
    onExit: (fn) => void (exitFn = fn),
  };
}

/** End of file on a terminal in canonical mode: ^D. */
const EOF = Buffer.of(4);

function withTerminal(
  argv: string[],
  env: NodeJS.ProcessEnv,
  size: { cols: number; rows: number },
): ExecProcess {
  let outputFn: (stream: 'stdout' | 'stderr', data: Buffer) => void = () => {};
  const pty = new Pty(size, (d) => outputFn('stdout', d));
  const slave = pty.slave!;
  // Its own session (libuv's setsid), with no controlling terminal: setsid --ctty gives it one
  // inside the job (terminalExecArgv). Nothing else of this process's: sealed-stdio.ts.
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { TERM: 'xterm-256color', ...env },
    stdio: sealedStdio([slave, slave, slave]),
    detached: true,
  });
  pty.handedOver();
  let exitFn: (exitCode: number, signal: string | null) => void = () => {};
  let ended = false;
  const exit = (exitCode: number, signal: string | null) => {
    if (ended) return;
    ended = true;
    pty.close();
    exitFn(exitCode, signal);
  };
  child.once('error', () => exit(127, null));
  child.once('exit', (code, signal) => {
    const status = code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0);
    // What it wrote last is read before its end is said; a stray holder of the terminal is not waited for long.
    const late = setTimeout(() => exit(status, signal), 1000);
    void pty.drained().then(() => {
      clearTimeout(late);
      exit(status, signal);
    });
  });
  return {
    write: (data) => pty.write(data),
    end: () => pty.write(EOF),
    resize: (cols, rows) => pty.resize(cols, rows),
    pause: () => pty.pause(),
    resume: () => pty.resume(),
    // A hang-up for the command's session (SIGHUP, as a dropped ssh), SIGKILL for the nsenters.
    kill: () => {
      pty.close();
      if (child.pid) killGroup(child.pid, 'SIGKILL');
    },
    onOutput: (fn) => void (outputFn = fn),
    onExit: (fn) => void (exitFn = fn),
  };
}
