/**
 * A job's own Unix identity (docs/SECURITY.md): where the server can switch users, the local
 * factory runs each job under a uid and gid of its own, with no supplementary groups, so that the
 * kernel keeps it from the server's files, from other jobs' processes (signals, /proc/PID/environ,
 * ptrace) and from their working directories. Node's spawn does the switch (libuv drops the
 * supplementary groups, then sets the gid and the uid, after the chdir and before the exec).
 *
 * A uid that is the job's alone also tells which processes are the job's, wherever they went:
 * `endProcesses` ends every one of them — a daemon that left the job's process group and cgroup
 * included — which is what lets the factory give the uid to another job.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';

export interface JobIdentity {
  uid: number;
  gid: number;
  /**
   * A named user's (a project mapped to it, `runAs.projects`): other processes of the uid are
   * not the job's — the user's other jobs, their sessions — so none is ended by uid; the job's
   * process group and cgroup end what it started.
   */
  shared?: boolean;
}

/**
 * Ends every process of the job's uid; resolves true once none is left, false if some outlived
 * `timeoutMs` (say a process stuck in the kernel: the uid must not be given to another job yet).
 * First a `kill -9 -1` run as the uid, always: the kernel delivers it to all of the uid's
 * processes in one pass over the process list, which no fork can slip through — a look at /proc
 * first could (a daemon that changes its pid every few milliseconds, forking and exiting, is
 * between two pids when a scan passes it, and a scan that saw nothing sent nothing). Then /proc
 * is read until none is left, and a straggler is killed by pid. A zombie counts as gone: it runs
 * nothing and holds nothing.
 */
export async function endProcesses(id: JobIdentity, timeoutMs = 5000): Promise<boolean> {
  if (id.shared) return true;
  await new Promise<void>((resolve) => {
    const child = spawn('/bin/sh', ['-c', 'kill -9 -1'], {
      uid: id.uid,
      gid: id.gid,
      stdio: 'ignore',
      env: { PATH: '/usr/bin:/bin' },
      cwd: '/',
    });
    child.on('error', () => resolve());
    child.on('exit', () => resolve());
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = processesOf(id.uid);
    if (left.length === 0) return true;
    if (Date.now() > deadline) return false;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await delay(10);
  }
}

/** The live (not zombie) processes whose real uid is `uid`. */
export function processesOf(uid: number): number[] {
  const pids: number[] = [];
  for (const [pid, status] of processStatuses())
    if (realUid(status) === uid && !/^State:\s*Z/m.test(status)) pids.push(pid);
  return pids;
}

/** Every process's /proc/PID/status text, skipping those that exit while it is read. */
function* processStatuses(): Generator<[number, string]> {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    try {
      yield [Number(name), readFileSync(`/proc/${name}/status`, 'utf8')];
    } catch {
      // exited meanwhile
    }
  }
}

const realUid = (status: string): number => Number(/^Uid:\s*(\d+)/m.exec(status)?.[1] ?? -1);

/** Linux capability numbers (linux/capability.h) the switch needs. */
const CAP_CHOWN = 0;
const CAP_SETGID = 6;
const CAP_SETUID = 7;

/**
 * Whether this process may run jobs under other uids: root, or holding CAP_SETUID, CAP_SETGID and
 * CAP_CHOWN (the working directory is given to the job's uid). Undefined if so, else why not.
 */
export function cannotSwitchUsers(): string | undefined {
  if (process.platform !== 'linux')
    return `jobs can run under their own uid on Linux only (this is ${process.platform})`;
  if (process.geteuid?.() === 0) return undefined;
  let effective = 0n;
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    effective = m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    // no /proc: treated as no capabilities
  }
  const missing = [
    [CAP_SETUID, 'CAP_SETUID'],
    [CAP_SETGID, 'CAP_SETGID'],
    [CAP_CHOWN, 'CAP_CHOWN'],
  ].filter(([bit]) => (effective & (1n << BigInt(bit!))) === 0n);
  if (missing.length === 0) return undefined;
  return `the server runs as uid ${process.geteuid?.()} without ${missing.map(([, n]) => n).join(', ')}`;
}

/**
 * The uids in [first, last] that have a live process: what a server that died left running under
 * the factory's uids (the range is berth's alone: docs/CONFIGURATION.md).
 */
export function uidsWithProcesses(first: number, last: number): Set<number> {
  const found = new Set<number>();
  for (const [, status] of processStatuses()) {
    const uid = realUid(status);
    if (uid >= first && uid <= last && !/^State:\s*Z/m.test(status)) found.add(uid);
  }
  return found;
}
