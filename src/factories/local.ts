/**
 * The `local` factory: a worker is a working directory under DATA/workers plus the job's process
 * group on this machine, run by one shared agent host process (see agent/host.ts), and — where
 * the machine allows — cgroups that enforce the job's requests (see cgroups.ts). A gang job's
 * worker runs its members side by side here, each in a directory (`rank-R`) and cgroups of its
 * own with one worker's requests; every member's host is this machine.
 *
 * Isolated (`uids`: the server can switch users, isolation.ts), each member runs under a uid and
 * gid of its own from the range, which owns its directory (0700) and its groups' cgroup.procs; the
 * data directory and DATA/workers are 0711, so a job reaches its own directory by its path and
 * lists nothing (who runs as which uid: worker-identities.ts; the directories: worker-dirs.ts). A
 * worker's OCI image and its members' layers are worker-images.ts's.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeCgroup, type JobCgroup } from '../agent/cgroups.js';
import type { HostCommand, HostEvent } from '../agent/host-protocol.js';
import { groupAlive, killGroup } from '../agent/process-group.js';
import type { CgroupsMode } from '../config/schema.js';
import { CgroupEnforcement } from './cgroups.js';
import type { UidRange } from '../domain/uid-range.js';
import type {
  ExecRun,
  ExecSession,
  Factory,
  FactoryListener,
  WorkerHandle,
  WorkerRequest,
} from './factory.js';
import { HostExecClient } from './host-execs.js';
import type { UnixUser } from './unix-users.js';
import {
  deviceCounts,
  deviceEnv,
  devicesWanted,
  DeviceBook,
  type DeviceAssignment,
  type DeviceInventory,
} from '../domain/devices.js';
import { controlFiles, denyRule } from './devices.js';
import type { JobImage, SandboxSpec } from '../agent/sandbox.js';
import { packageRoot } from '../package-root.js';
import type { WorkerImages } from './worker-images.js';
import { WorkerIdentities } from './worker-identities.js';
import { makeWorkdirs, removeWorkdir } from './worker-dirs.js';

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
  /** Each member under a uid of its own from this range; absent: as the server's user. */
  uids?: UidRange;
  /** Projects whose jobs run as a user of this machine instead (`runAs.projects`). */
  users?: Map<string, UnixUser>;
  /** Where workers' directories are made (default DATA/workers). */
  workRoot?: string;
  /** The machine's devices (devices.ts): each member gets its own of what it requests. */
  devices?: DeviceInventory;
  /** Namespaces per job (namespaces.ts, agent/sandbox.ts); absent: the host's. */
  sandbox?: { tmpBytes: number; network: 'host' | 'none' };
  /** Where its workers' images and layers come from (worker-images.ts); absent: no image runs here. */
  images?: WorkerImages;
}

export class LocalFactory implements Factory {
  readonly kind = 'local';
  readonly inProcess = false;
  readonly name: string;
  readonly capacity: number;
  private host: ChildProcess | undefined;
  /** `berth exec` sessions, run by the host (agent/host-exec.ts). */
  private readonly execs = new HostExecClient((cmd) => {
    if (!this.host?.connected) return false;
    this.host.send(cmd, () => {}); // a host going away: its exit ends the sessions
    return true;
  });
  private hostReady: Promise<ChildProcess> | undefined;
  private readonly live = new Set<number>();
  private readonly killWaiters = new Map<number, (clean: boolean) => void>();
  private closing = false;
  /** What this machine lets the factory enforce (throws at construction for an unmet `required`). */
  readonly enforcement: CgroupEnforcement;
  /** The removal of groups that servers which died left, which the first job waits for. */
  private readonly swept: Promise<void>;
  /** Each worker's cgroups, one per member. */
  private readonly cgroups = new Map<number, JobCgroup[]>();
  /** The process groups of each gang worker's members, by rank, for its handle. */
  private readonly memberPids = new Map<number, number[]>();
  /** Each live worker's members whose process group the host reports gone (and whether clean). */
  private readonly exited = new Map<number, { members: number; gone: number; clean: boolean }>();
  /** Who each worker's members run as. */
  private readonly identities: WorkerIdentities;
  /** Which member holds which device (with `devices`). */
  private readonly book: DeviceBook | undefined;
  /** Each live worker's devices, by rank: kept in every handle it reports. */
  private readonly assigned = new Map<number, DeviceAssignment[]>();
  readonly devices: Record<string, number> | undefined;
  /** berth's own files, which a job's `berth` runs from. */
  private berthRoot: string | undefined;

  constructor(private readonly opts: LocalFactoryOptions) {
    this.name = opts.name;
    this.capacity = opts.capacity;
    this.enforcement = CgroupEnforcement.open({
      factory: opts.name,
      dataDir: opts.dataDir,
      mode: opts.cgroups ?? 'auto',
      pidsLimit: opts.pidsLimit,
      devices: opts.devices !== undefined,
    });
    if (opts.devices) {
      this.book = new DeviceBook(opts.devices);
      this.devices = deviceCounts(opts.devices);
    }
    const workers = this.workRoot;
    mkdirSync(workers, { recursive: true, mode: 0o700 });
    this.identities = new WorkerIdentities(opts.uids, opts.users);
    if (opts.uids) {
      // Traversable, not listable: a job under its own uid reaches its directory by its path;
      // everything else in the data directory stays the server's alone (0700 and 0600), and the
      // data directory itself too when the workers' directories are elsewhere.
      chmodSync(workers, 0o711);
      if (opts.workRoot === undefined) chmodSync(opts.dataDir, 0o711);
    }
    this.swept = Promise.all([this.enforcement.removeStale(), this.identities.endStrays()]).then(() => {});
  }

  /** The directories of a running worker's cgroups (none when its job requests nothing enforced). */
  cgroupDirs(workerId: number): string[] {
    return (this.cgroups.get(workerId) ?? []).flatMap((c) => c.dirs);
  }

  private get workRoot(): string {
    return this.opts.workRoot ?? join(this.opts.dataDir, 'workers');
  }

  private workdir(workerId: number): string {
    return join(this.workRoot, String(workerId));
  }

  private startHost(): Promise<ChildProcess> {
    // A worker whose making began before close() (its checks passed, then it waited for its
    // directory or groups) must not start a host once the factory is closed: nothing would stop
    // that host, and the server's process would never exit.
    if (this.closing)
      return Promise.reject(new Error('the local factory is closed (the server is stopping)'));
    return (this.hostReady ??= new Promise((resolve, reject) => {
      // BERTH_CA is this factory's to set: one the server was started with must not leak in.
      const { BERTH_CA: _inherited, ...env } = process.env;
      const child = fork(HOST_MAIN, [], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        // Structured clone, not JSON: an exec's bytes cross as bytes (agent/host-protocol.ts).
        serialization: 'advanced',
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
        this.execs.hostGone(`the agent host exited (${signal ?? `code ${code}`})`);
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
        const devices = this.assigned.get(e.workerId);
        // The whole handle each time: the devices it holds stay on record (restore.ts counts them).
        const handle: WorkerHandle = {
          workdir: this.workdir(e.workerId),
          pid: e.pid,
          ...(devices ? { devices } : {}),
        };
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
        if (e2) {
          e2.gone++;
          e2.clean &&= e.clean;
        }
        break;
      }
      case 'failed':
        if (this.live.has(e.workerId))
          this.opts.listener.workerLost(e.workerId, `agent failed: ${e.message}`);
        break;
      case 'killed':
        this.killWaiters.get(e.workerId)?.(e.clean);
        break;
      case 'exec-output':
      case 'exec-exit':
        this.execs.event(e);
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

  exec(jobId: number, workerId: number, rank: number, run: ExecRun): ExecSession {
    if (!this.live.has(workerId)) throw new Error(`worker ${workerId} is not running here`);
    return this.execs.open(jobId, workerId, rank, run);
  }

  async create(req: WorkerRequest): Promise<WorkerHandle> {
    if (this.closing) throw new Error('the local factory is closed (the server is stopping)');
    if (req.token === null) throw new Error('a local worker needs a job token');
    const token = req.token;
    const workdir = this.workdir(req.workerId);
    const gang = req.members > 1;
    const ranks = Array.from({ length: req.members }, (_, rank) => rank);
    const dirs = ranks.map((rank) => (gang ? join(workdir, `rank-${rank}`) : workdir));
    await this.swept;
    const identities = this.identities.take(req.members, req.project);
    const cgroups: (JobCgroup | undefined)[] = [];
    let devices: DeviceAssignment[] | undefined;
    let images: JobImage[] | undefined;
    let host: ChildProcess;
    try {
      if (req.image !== undefined) images = await this.prepareImage(req, dirs);
      devices = this.takeDevices(req, ranks);
      // Its directories and its groups at once: neither needs the other. A failure to make the
      // directories is thrown once the groups are made (or have failed first).
      const made = makeWorkdirs(workdir, gang ? dirs : [], identities).then(
        () => undefined,
        (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
      );
      if (this.enforcement.enabled)
        for (const rank of ranks)
          cgroups.push(
            await this.enforcement.create(
              req.jobId,
              req.workerId,
              req.requests,
              gang ? rank : undefined,
              identities?.[rank],
              // A job that asked for none may open none.
              this.book ? this.book.othersFiles(devices?.[rank] ?? {}).map(denyRule) : [],
            ),
          );
      const failed = await made;
      if (failed) throw failed;
      host = await this.startHost();
    } catch (e) {
      // No worker is recorded as made, so no destroy will come for its groups; nothing ran yet.
      for (const c of cgroups) if (c) await removeCgroup(c.dirs).catch(() => {});
      this.identities.untake(identities);
      this.book?.release(String(req.workerId));
      // Whatever the pull got to (the image held, some layers made) goes too: release is a no-op
      // for a worker that holds nothing.
      if (req.image !== undefined) await this.opts.images?.release(req.workerId);
      throw e;
    }
    if (identities) this.identities.hold(req.workerId, identities);
    if (devices) this.assigned.set(req.workerId, devices);
    const made = cgroups.filter((c): c is JobCgroup => c !== undefined);
    if (made.length > 0) this.cgroups.set(req.workerId, made);
    if (gang) this.memberPids.set(req.workerId, []);
    this.live.add(req.workerId);
    this.exited.set(req.workerId, { members: req.members, gone: 0, clean: true });
    for (const rank of ranks) {
      const cgroup = cgroups[rank];
      const identity = identities?.[rank];
      this.send(host, {
        type: 'start',
        workerId: req.workerId,
        rank,
        url: req.url,
        token,
        workdir: dirs[rank]!,
        ...(cgroup ? { cgroup } : {}),
        ...(identity ? { identity } : {}),
        ...(devices ? { env: deviceEnv(this.opts.devices!, devices[rank]!) } : {}),
        ...(this.opts.sandbox ? { sandbox: this.sandboxSpec(dirs[rank]!, devices?.[rank]) } : {}),
        ...(images ? { image: images[rank]! } : {}),
      });
    }
    return { workdir, ...(devices ? { devices } : {}) };
  }

  /** The worker's image for each member, pulled if this machine lacks it (said as the worker's wait). */
  private prepareImage(req: WorkerRequest, dirs: string[]): Promise<JobImage[]> {
    // The server refuses an image for a target whose factory cannot run one (server/run.ts).
    if (!this.opts.images || !this.opts.sandbox)
      return Promise.reject(
        new Error(`factory ${this.name} runs no images (they need namespaces of their own)`),
      );
    return this.opts.images.prepare(
      req.workerId,
      req.jobId,
      req.image!,
      dirs,
      (reason) => this.opts.listener.workerWaiting?.(req.workerId, reason),
      req.imageLogin,
    );
  }

  /**
   * A member's namespaces: its directory, and what else it is told of (the CA file, berth itself
   * for the `berth` it may run) where a private mount would hide it; only its own device files,
   * with their vendor's control nodes, in its /dev — a job that asked for none opens none.
   */
  private sandboxSpec(workdir: string, devices: DeviceAssignment | undefined): SandboxSpec {
    const files =
      devices && this.book
        ? [...this.book.ownFiles(devices), ...controlFiles(this.book.vendors(devices))]
        : [];
    return {
      workdir,
      keep: [...(this.opts.ca ? [this.opts.ca] : []), (this.berthRoot ??= packageRoot())],
      devices: files,
      tmpBytes: this.opts.sandbox!.tmpBytes,
      network: this.opts.sandbox!.network,
    };
  }

  /**
   * Each member's devices of the kinds it requests (per member), none another running worker
   * holds; undefined when the factory has no devices or the job asks for none. The controller
   * counted them before it asked for the worker (controller/pool.ts), so they are free.
   */
  private takeDevices(req: WorkerRequest, ranks: number[]): DeviceAssignment[] | undefined {
    const inventory = this.opts.devices;
    if (!inventory || !this.book) return undefined;
    const wanted = devicesWanted(inventory, req.requests ?? {});
    if (Object.keys(wanted).length === 0) return undefined;
    const holder = String(req.workerId);
    const assigned: DeviceAssignment[] = [];
    for (const rank of ranks) {
      const got = this.book.take(holder, wanted);
      if (!got) {
        this.book.release(holder);
        const [kind, n] = Object.entries(wanted).find(([k, w]) => this.book!.free(k) < w)!;
        throw new Error(
          `factory ${this.name} has ${this.book.free(kind)} free ${kind} for rank ${rank}, which needs ${n}`,
        );
      }
      assigned.push(got);
    }
    return assigned;
  }

  async destroy(workerId: number, handle: WorkerHandle | null, stopped?: () => void): Promise<void> {
    const exited = this.exited.get(workerId);
    this.exited.delete(workerId);
    const host = this.host?.connected ? this.host : undefined;
    // Whether no process of the worker's uids is left (true when it has none).
    let clean = true;
    if (this.live.delete(workerId) && host) {
      if (exited && exited.gone >= exited.members) {
        // Every member's group is gone already (the host killed each after its exit, and every
        // process of its uid): the host only forgets the worker, and nothing here waits for it.
        this.send(host, { type: 'kill', workerId });
        clean = exited.clean;
      } else {
        clean = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), 10_000);
          this.killWaiters.set(workerId, (ended) => {
            clearTimeout(timer);
            resolve(ended);
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
    // Whether the kernel has vouched that nothing of it runs: its pid namespace is empty (a
    // sandbox), or no process of its own uid is left. Then its groups are empty, and the next
    // worker may start while they go; else what is left in them (a daemon that left its process
    // group, under the server's uid) is killed with them first.
    const contained = clean && (this.opts.sandbox !== undefined || this.identities.holds(workerId));
    const release = () => {
      this.identities.giveBack(workerId, clean);
      this.book?.release(String(workerId));
      this.assigned.delete(workerId);
      // Nothing of it runs any more: the next worker may start while its directory goes.
      stopped?.();
    };
    if (contained) release();
    const cgroups = this.cgroups.get(workerId);
    if (cgroups) {
      this.cgroups.delete(workerId);
      for (const cgroup of cgroups) await removeCgroup(cgroup.dirs);
    }
    if (!contained) release();
    for (const layer of (await this.opts.images?.release(workerId)) ?? [])
      process.stderr.write(`berth: worker ${workerId}'s image layer: not removed: ${layer}\n`);
    await removeWorkdir(workerId, handle?.workdir ?? this.workdir(workerId));
  }

  async close(): Promise<void> {
    this.closing = true;
    this.identities.close();
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
