/**
 * A direct worker of the slurm factory (`sharedDir` set): its Slurm batch script runs the job's
 * command itself, with no `berth agent` and no Node.js on the node, so that one Slurm job per
 * berth job costs about what a plain `sbatch` does. The server plays the agent's part, in its own
 * process, through the controller's AgentPort: it starts the job when squeue says the Slurm job
 * runs, reads the job's output from a directory every node shares with the server (Slurm writes
 * it there), stops the job on cancel or timeout with scancel, and reports how it ended from the
 * exit status the script leaves beside the output. This is how Slurm executors of workflow
 * systems work (a shared filesystem, squeue, an exit-code file).
 *
 * Files, in `<sharedDir>` (the server's user's; NAME is the worker's Slurm job name):
 *   NAME/         the job's working directory (BERTH_WORKDIR), mode 0700
 *   NAME.out      its stdout and stderr, written by Slurm (--output)
 *   NAME.logged   how much of NAME.out the server has appended to the job's log: after a
 *                 restart, the server that adopts the worker goes on from there
 *   NAME.exit     its exit status, written by the script once the command has ended
 * All side by side, so that one watch of sharedDir sees every job end at once where the
 * filesystem reports changes (a local one; NFS does not, and squeue's poll finds the end).
 * The job's variables (its token among them) go in the script itself, which Slurm keeps as
 * privately as the environment it keeps of every job, rather than in a file beside it: making a
 * file costs a shared filesystem a round trip to its server, and even a local ext4 here 0.3–0.6 ms
 * of kernel time (PERFORMANCE.md, "Slurm"). For the same reason the working directory is made in
 * libuv's thread pool, off the event loop, not by a synchronous call.
 */
import {
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import { exitStatus } from '../../agent/job-process.js';
import { removeBeneath } from '../../agent/remove-beneath.js';
import { join } from 'node:path';
import type { JobIdentity } from '../../agent/identity.js';
import type { FinishRequest, StartResponse } from '../../agent/protocol.js';
import { resourceVariable } from '../../agent/run-job.js';
import type { AgentPort } from '../factory.js';

/** A shell word for /bin/sh: unchanged when safe, else single-quoted. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

const SHELL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** The most output one read takes into the job's log (the rest comes in the next read). */
const READ_CHUNK = 1024 * 1024;

export interface DirectPaths {
  /** The job's working directory. */
  work: string;
  /** Where earlier servers wrote the job's variables: removed with the rest, if there. */
  env: string;
  out: string;
  exit: string;
  logged: string;
}

export function directPaths(sharedDir: string, name: string): DirectPaths {
  const base = join(sharedDir, name);
  return {
    work: base,
    env: `${base}.env`,
    out: `${base}.out`,
    exit: `${base}.exit`,
    logged: `${base}.logged`,
  };
}

/** Where the job reaches the server, and with what. */
export interface DirectContext {
  url: string;
  token: string;
  workerId: number;
}

/** The job's variables, as the agent would give them (agent/run-job.ts), but BERTH_HOSTS. */
export function directEnv(
  spec: StartResponse,
  paths: DirectPaths,
  ctx: DirectContext,
): Record<string, string> {
  const env: Record<string, string> = { ...spec.env };
  for (const [type, metadata] of Object.entries(spec.resources))
    for (const [field, value] of Object.entries(metadata)) env[resourceVariable(type, field)] = value;
  return {
    ...env,
    BERTH_WORKER_ID: String(ctx.workerId),
    BERTH_URL: ctx.url,
    BERTH_TOKEN: ctx.token,
    BERTH_JOB_ID: String(spec.jobId),
    BERTH_PROJECT: spec.project,
    BERTH_WORKDIR: paths.work,
    BERTH_RANK: '0',
    BERTH_WORLD_SIZE: '1',
  };
}

/** `export NAME='value'` lines for /bin/sh; names a shell cannot take are left out. */
export function envFile(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([name, value]) => SHELL_NAME.test(name) && !value.includes('\0'))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('');
}

/**
 * The batch script: the job's variables (`env`), then its command, run in its directory; its exit
 * status is left in `exit`.
 */
export function directScript(
  spec: StartResponse,
  paths: DirectPaths,
  env: Record<string, string>,
  identity?: JobIdentity,
): string {
  const q = shellQuote;
  // Under a uid of its own: the script (root) runs the command through setpriv (util-linux), and
  // ends every process of the uid on the node before it — what an earlier worker's job left — and
  // after it, before the exit status is written (agent/identity.ts does the same for agents).
  const as = identity ? `setpriv --reuid=${identity.uid} --regid=${identity.gid} --clear-groups -- ` : '';
  const sweep = identity ? [`${as}/bin/sh -c 'kill -9 -1' 2>/dev/null`] : [];
  return [
    '#!/bin/sh',
    `# berth job ${spec.jobId}, run without an agent: the server reads its output and exit status here.`,
    envFile(env).trimEnd(),
    ...sweep,
    `cd ${q(paths.work)} || { echo "berth: the job's working directory is gone" >&2; exit 125; }`,
    'export BERTH_HOSTS="${SLURMD_NODENAME:-$(hostname)}"',
    `${as}${spec.command.map(q).join(' ')} </dev/null`,
    'rc=$?',
    ...sweep,
    `echo "$rc" > ${q(paths.exit)}`,
    'exit "$rc"',
    '',
  ].join('\n');
}

/*
 * A job's output and exit status are small, and read on its way to its end: with the synchronous
 * calls, which cost microseconds each, rather than through the promise API, whose hand-off to
 * libuv's thread pool cost the server about a millisecond per call under load (PERFORMANCE.md,
 * "Slurm"). Removing files is another matter: an unlink or rmdir took the kernel 0.1–1 ms here,
 * and a shared filesystem a round trip, so it goes to the thread pool, off the event loop; by
 * then the job has ended and nothing waits for it but the worker's destroy.
 */

/**
 * Makes the worker's working directory (mode 0700: the job's files are the job's), its uid's when
 * the job runs as another user than the server. A job Slurm runs as a mapped user (`slurmUser`)
 * writes its output and exit status as that user: those files are made for it beforehand (0600),
 * since the directory they go in is not its to write.
 */
export async function prepareDirect(
  paths: DirectPaths,
  owner?: JobIdentity,
  slurmUser?: JobIdentity,
): Promise<void> {
  await mkdir(paths.work, { mode: 0o700 });
  if (owner) await chown(paths.work, owner.uid, owner.gid);
  if (slurmUser)
    for (const file of [paths.out, paths.exit]) {
      await writeFile(file, '', { mode: 0o600 });
      await chown(file, slurmUser.uid, slurmUser.gid);
    }
}

/** Removes what the worker left in sharedDir (its working directory whole: it may be a large tree). */
export async function removeDirect(paths: DirectPaths): Promise<void> {
  const files = [paths.env, paths.out, paths.exit, paths.logged];
  // The working directory is the job's: removed without following a link it put there.
  await Promise.all([...files.map((path) => rm(path, { force: true })), removeBeneath(paths.work)]);
}

/**
 * Calls `ended(name)` as a worker's `<name>.exit` is written: at once where the filesystem reports
 * changes; undefined where it cannot be watched (squeue's poll then finds every end). NFS reports
 * nothing written on other machines: there too the poll finds them.
 */
export function watchExits(sharedDir: string, ended: (name: string) => void): FSWatcher | undefined {
  try {
    const watcher = watch(sharedDir, { persistent: false }, (_event, file) => {
      if (typeof file === 'string' && file.endsWith('.exit')) ended(file.slice(0, -'.exit'.length));
    });
    watcher.on('error', () => watcher.close());
    return watcher;
  } catch {
    return undefined;
  }
}

/**
 * The exit status the script left; undefined if it left none (killed, or never ran the command)
 * or has not finished writing it (a whole line).
 */
export function readExit(paths: DirectPaths): number | undefined {
  try {
    const text = readFileSync(paths.exit, 'utf8');
    const n = Number(text.trim());
    return text.endsWith('\n') && Number.isInteger(n) && n >= 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** How a command that left exit status `rc` ended, as an agent reports it (sh: 128 + N is signal N). */
export function exitedWith(rc: number): FinishRequest {
  return { outcome: 'exited', ...exitStatus(rc) };
}

/** Why the server stops a direct run. */
export type DirectStop = { outcome: 'cancelled' | 'timeout'; message: string };

export interface DirectRunOptions {
  workerId: number;
  jobId: number;
  paths: DirectPaths;
  agent: AgentPort;
  /** Stops the Slurm job: SIGTERM, then SIGKILL after `graceSeconds` (slurm-factory.ts). */
  stop: (graceSeconds: number) => void;
  /** The run failed in a way no outcome describes (its worker is then lost). */
  lost: (message: string) => void;
  /** Taken over from a previous server: its output is read on from where that one left it. */
  adopted?: boolean;
}

/**
 * One direct worker's run, as the server sees it: started when Slurm runs it, output read at each
 * poll, ended when Slurm says so.
 */
export class DirectRun {
  private spec: StartResponse | undefined;
  private starting: Promise<void> | undefined;
  private stopping: DirectStop | undefined;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;
  private offset: number;
  private reading: Promise<void> = Promise.resolve();

  constructor(private readonly o: DirectRunOptions) {
    this.offset = o.adopted ? readOffset(o.paths) : 0;
  }

  get done(): boolean {
    return this.ended;
  }

  /** Slurm runs it (on `host`): the job starts; its heartbeats and timeout run from now. */
  start(host: string): Promise<void> {
    return (this.starting ??= this.begin(host));
  }

  private async begin(host: string): Promise<void> {
    try {
      const spec = await this.o.agent.agentStart(this.o.jobId, { rank: 0, host });
      if (!spec) throw new Error('the server gave no start');
      this.spec = spec;
    } catch (e) {
      // Being stopped before it started: its Slurm job goes; its end reports nothing.
      this.ended = true;
      this.o.stop(0);
      this.o.lost(`its job could not start: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    if (this.spec.timeoutSeconds !== null) {
      const seconds = this.spec.timeoutSeconds;
      this.timer = setTimeout(
        () => this.halt({ outcome: 'timeout', message: `timed out after ${seconds}s` }),
        seconds * 1000,
      );
      this.timer.unref();
    }
    void this.beat();
  }

  /** Heartbeats (in-process long polls): they keep the job alive and say when it must stop. */
  private async beat(): Promise<void> {
    const spec = this.spec!;
    const waitMs = (spec.heartbeatSeconds * 1000) / 3;
    while (!this.ended) {
      try {
        const r = await this.o.agent.agentHeartbeat(spec.jobId, waitMs);
        if (r.cancel && !this.ended) this.halt({ outcome: 'cancelled', message: r.reason ?? 'cancelled' });
        if (r.cancel) return;
      } catch {
        return; // the job is no longer the worker's: its end is the controller's to decide
      }
    }
  }

  private halt(why: DirectStop): void {
    if (this.stopping || this.ended) return;
    this.stopping = why;
    this.o.stop(this.spec?.graceSeconds ?? 0);
  }

  /**
   * Appends what the job wrote since the last read to its log, and notes how far it has read
   * (`logged`) for a server that takes the worker over — not once the run has ended. One read at
   * a time: a poll's and the end's would otherwise both append what lies past the same offset.
   */
  readOutput(ended = false): Promise<void> {
    const read = this.reading.then(() => this.readMore(ended));
    this.reading = read.catch(() => {});
    return read;
  }

  private async readMore(ended: boolean): Promise<void> {
    let fd: number;
    try {
      fd = openSync(this.o.paths.out, 'r');
    } catch {
      return; // not written yet
    }
    try {
      for (;;) {
        const size = Math.min(fstatSync(fd).size - this.offset, READ_CHUNK);
        if (size <= 0) return;
        const buf = Buffer.allocUnsafe(size);
        const n = readSync(fd, buf, 0, size, this.offset);
        if (n === 0) return;
        // Bytes as written: the log store keeps them so (a sequence cut by the read joins up there).
        await this.o.agent.agentLogs(this.o.jobId, buf.subarray(0, n));
        this.offset += n;
        if (!ended) writeFileSync(this.o.paths.logged, String(this.offset));
        if (n < READ_CHUNK) return;
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Slurm says its job ended (`state`): the rest of the output, then how the run ended. */
  async end(state: string, host: string): Promise<void> {
    if (this.ended) return;
    // Ended before a poll saw it run: it ran all the same.
    await this.start(host);
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    try {
      await this.readOutput(true);
    } catch {
      // Output that cannot be read is lost; the outcome must still be reported.
    }
    const rc = readExit(this.o.paths);
    let result: FinishRequest;
    if (this.stopping)
      result = {
        ...(rc === undefined ? { exitCode: 143, signal: 'SIGTERM' } : exitedWith(rc)),
        ...this.stopping,
      };
    else if (rc !== undefined) result = exitedWith(rc);
    else return this.o.lost(`ended ${state} without leaving the command's exit status`);
    try {
      await this.o.agent.agentFinish(this.o.jobId, result);
    } catch (e) {
      this.o.lost(`its end could not be reported: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** The worker is destroyed: nothing more is reported. */
  close(): void {
    this.ended = true;
    clearTimeout(this.timer);
  }
}

function readOffset(paths: DirectPaths): number {
  try {
    const n = Number(readFileSync(paths.logged, 'utf8'));
    return Number.isSafeInteger(n) && n >= 0 ? n : 0;
  } catch {
    return 0;
  }
}
