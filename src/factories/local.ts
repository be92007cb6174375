/**
 * The `local` factory: a worker is a working directory under DATA/workers plus the job's process
 * group on this machine, run by one shared agent host process (see agent/host.ts), and — where
 * the machine allows — cgroups that enforce the job's requests (see cgroups.ts). A gang job's
 * worker runs its members side by side here, each in a directory (`rank-R`) and cgroups of its
 * own with one worker's requests; every member's host is this machine.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { mkdir, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeCgroup, type JobCgroup } from '../agent/cgroups.js';
import type { HostCommand, HostEvent } from '../agent/host-protocol.js';
import { groupAlive, killGroup } from '../agent/process-group.js';
import type { CgroupsMode } from '../config/schema.js';
import { CgroupEnforcement } from './cgroups.js';
import type { Factory, FactoryListener, WorkerHandle, WorkerRequest } from './factory.js';

/** The host's entry point, as .ts under tsx (tests) or .js when built. */
const HOST_MAIN = fileURLToPath(
  new URL(`../agent/host-main${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);

export interface LocalFactoryOptions {
  name: string;
  capacity: number;
  dataDir: string;
  listener: FactoryListener;
  /** Enforce jobs' requests with cgroups: `auto` (default), `off`, or `required`. */
  cgroups?: CgroupsMode;
  /** With cgroups: the most processes one job may have. */
  pidsLimit?: number;
  /** A PEM file its agents trust for the server's certificate (HTTPS); see agent/trust.ts. */
  ca?: string;
}

export class LocalFactory implements Factory {
  readonly kind = 'local';
  readonly inProcess = false;
  readonly name: string;
  readonly capacity: number;
  private host: ChildProcess | undefined;
  private hostReady: Promise<ChildProcess> | undefined;
  private readonly live = new Set<number>();
  private readonly killWaiters = new Map<number, () => void>();
  private closing = false;
  /** What this machine lets the factory enforce (throws at construction for an unmet `required`). */
  readonly enforcement: CgroupEnforcement;
  /** The removal of groups that servers which died left, which the first job waits for. */
  private readonly swept: Promise<void>;
  /** Each worker's cgroups, one per member. */
  private readonly cgroups = new Map<number, JobCgroup[]>();
  /** The process groups of each gang worker's members, by rank, for its handle. */
  private readonly memberPids = new Map<number, number[]>();
  /** Each live worker's members whose process group the host reports gone. */
  private readonly exited = new Map<number, { members: number; gone: number }>();

  constructor(private readonly opts: LocalFactoryOptions) {
    this.name = opts.name;
    this.capacity = opts.capacity;
    this.enforcement = CgroupEnforcement.open({
      factory: opts.name,
      dataDir: opts.dataDir,
      mode: opts.cgroups ?? 'auto',
      pidsLimit: opts.pidsLimit,
    });
    this.swept = this.enforcement.removeStale();
    mkdirSync(join(opts.dataDir, 'workers'), { recursive: true, mode: 0o700 });
  }

  /** The directories of a running worker's cgroups (none when its job requests nothing enforced). */
  cgroupDirs(workerId: number): string[] {
    return (this.cgroups.get(workerId) ?? []).flatMap((c) => c.dirs);
  }

  private workdir(workerId: number): string {
    return join(this.opts.dataDir, 'workers', String(workerId));
  }

  private startHost(): Promise<ChildProcess> {
    return (this.hostReady ??= new Promise((resolve, reject) => {
      // BERTH_CA is this factory's to set: one the server was started with must not leak in.
      const { BERTH_CA: _inherited, ...env } = process.env;
      const child = fork(HOST_MAIN, [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv: process.execArgv,
        env: this.opts.ca ? { ...env, BERTH_CA: this.opts.ca } : env,
      });
      child.on('message', (e: HostEvent) => {
        if (e.type === 'ready') resolve(child);
        else this.onHostEvent(e);
      });
      // Sending to a host that is going away fails with EPIPE; its exit handler cleans up.
      child.on('error', (err) => reject(err));
      child.once('exit', (code, signal) => {
        this.host = undefined;
        this.hostReady = undefined;
        reject(new Error(`agent host exited (${signal ?? code})`));
        if (this.closing) return;
        // Every worker the host ran is gone with it.
        for (const id of this.live)
          this.opts.listener.workerLost(id, `agent host exited (${signal ?? `code ${code}`})`);
        this.live.clear();
        this.exited.clear();
      });
      this.host = child;
    }));
  }

  private onHostEvent(e: HostEvent): void {
    switch (e.type) {
      case 'spawned': {
        const handle: WorkerHandle = { workdir: this.workdir(e.workerId), pid: e.pid };
        const members = this.memberPids.get(e.workerId);
        if (members) {
          members[e.rank] = e.pid;
          handle.pid = members.find((p) => p !== undefined);
          handle.pids = members.filter((p) => p !== undefined);
        }
        this.opts.listener.handleChanged(e.workerId, handle);
        break;
      }
      case 'exited': {
        const e2 = this.exited.get(e.workerId);
        if (e2) e2.gone++;
        break;
      }
      case 'failed':
        if (this.live.has(e.workerId))
          this.opts.listener.workerLost(e.workerId, `agent failed: ${e.message}`);
        break;
      case 'killed':
        this.killWaiters.get(e.workerId)?.();
        break;
      case 'finished':
      case 'ready':
        break; // the outcome arrives through the agent protocol, like any remote agent's
    }
  }

  private send(host: ChildProcess, cmd: HostCommand): void {
    if (!host.connected) return;
    host.send(cmd, (err) => {
      if (err && cmd.type === 'start')
        this.opts.listener.workerLost(cmd.workerId, `agent host unreachable: ${err.message}`);
    });
  }

  async create(req: WorkerRequest): Promise<WorkerHandle> {
    if (this.closing) throw new Error('the local factory is closed (the server is stopping)');
    if (req.token === null) throw new Error('a local worker needs a job token');
    const token = req.token;
    const workdir = this.workdir(req.workerId);
    const gang = req.members > 1;
    const ranks = Array.from({ length: req.members }, (_, rank) => rank);
    const dirs = ranks.map((rank) => (gang ? join(workdir, `rank-${rank}`) : workdir));
    await makeWorkdirs(workdir, gang ? dirs : []);
    await this.swept;
    const cgroups: (JobCgroup | undefined)[] = [];
    let host: ChildProcess;
    try {
      if (this.enforcement.enabled)
        for (const rank of ranks)
          cgroups.push(
            await this.enforcement.create(req.jobId, req.workerId, req.requests, gang ? rank : undefined),
          );
      host = await this.startHost();
    } catch (e) {
      // No worker is recorded as made, so no destroy will come for its groups.
      for (const c of cgroups) if (c) await removeCgroup(c.dirs).catch(() => {});
      throw e;
    }
    const made = cgroups.filter((c): c is JobCgroup => c !== undefined);
    if (made.length > 0) this.cgroups.set(req.workerId, made);
    if (gang) this.memberPids.set(req.workerId, []);
    this.live.add(req.workerId);
    this.exited.set(req.workerId, { members: req.members, gone: 0 });
    for (const rank of ranks) {
      const cgroup = cgroups[rank];
      this.send(host, {
        type: 'start',
        workerId: req.workerId,
        rank,
        url: req.url,
        token,
        workdir: dirs[rank]!,
        ...(cgroup ? { cgroup } : {}),
      });
    }
    return { workdir };
  }

  async destroy(workerId: number, handle: WorkerHandle | null, stopped?: () => void): Promise<void> {
    const exited = this.exited.get(workerId);
    this.exited.delete(workerId);
    const host = this.host?.connected ? this.host : undefined;
    if (this.live.delete(workerId) && host) {
      if (exited && exited.gone >= exited.members) {
        // Every member's group is gone already (the host killed each after its exit): the host
        // only forgets the worker, and nothing here waits for its answer.
        this.send(host, { type: 'kill', workerId });
      } else {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 5000);
          this.killWaiters.set(workerId, () => {
            clearTimeout(timer);
            resolve();
          });
          this.send(host, { type: 'kill', workerId });
        });
        this.killWaiters.delete(workerId);
      }
    } else {
      // A worker from before a restart: its process groups may have outlived the old host.
      const pids = handle?.pids ?? (handle?.pid ? [handle.pid] : []);
      for (const pid of pids) if (isOurProcess(pid, workerId)) killGroup(pid, 'SIGKILL');
    }
    this.memberPids.delete(workerId);
    // After the kill: what is left in the job's groups (e.g. a daemon that left its process
    // group) is killed with them.
    const cgroups = this.cgroups.get(workerId);
    if (cgroups) {
      for (const cgroup of cgroups) await removeCgroup(cgroup.dirs);
      this.cgroups.delete(workerId);
    }
    // Nothing of it runs any more: the next worker may start while its directory goes.
    stopped?.();
    // Most jobs leave their directory empty: one rmdir, and a tree walk only for the others.
    const workdir = handle?.workdir ?? this.workdir(workerId);
    await rmdir(workdir).catch(() => rm(workdir, { recursive: true, force: true }));
  }

  async close(): Promise<void> {
    this.closing = true;
    const host = this.host;
    if (host) {
      await new Promise<void>((resolve) => {
        host.once('exit', () => resolve());
        host.disconnect(); // the host kills its jobs, removes their cgroups and exits
      });
    }
    await this.swept;
    this.enforcement.close();
  }
}

/**
 * A worker's directory and its members' (a gang's `rank-R`), each one mkdir: DATA/workers exists
 * (made at the factory's start), and a recursive mkdir walks the path with a stat per level.
 */
async function makeWorkdirs(workdir: string, members: string[]): Promise<void> {
  for (const dir of [workdir, ...members]) {
    try {
      await mkdir(dir, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') await mkdir(dir, { recursive: true, mode: 0o700 });
      else if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * Whether `pid` still runs the job of `workerId` (and not an unrelated process that reuses the
 * number): its environment carries BERTH_WORKER_ID. Linux-specific, like the local factory.
 */
function isOurProcess(pid: number, workerId: number): boolean {
  if (!groupAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(`BERTH_WORKER_ID=${workerId}`);
  } catch {
    return false;
  }
}
