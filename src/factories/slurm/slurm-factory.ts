/**
 * The `slurm` factory: a worker is a Slurm job that runs `berth agent` on whatever node Slurm
 * gives it. berth drives Slurm and never replaces it: Slurm places and starts the job, berth
 * decides which job runs when (quota, fair sharing) and speaks to the agent over HTTP.
 *
 * - Made with `sbatch --parsable`, named `berth-<installation>-<factory>-w<worker>` so that the
 *   name says whose it is; the agent's one-time credential travels in the job's environment.
 * - Watched with one `squeue` call for all of its workers every `pollSeconds` (never one per
 *   worker); the agent's heartbeats watch the rest. A worker pending in Slurm is reported with
 *   Slurm's reason (Resources, Priority, …); one whose Slurm job ended or vanished without its
 *   agent reporting is lost, with Slurm's state in the reason (NODE_FAIL, TIMEOUT, …).
 * - Destroyed with `scancel` (SIGTERM, then SIGKILL after Slurm's KillWait). A worker recorded
 *   before a crash but without its Slurm id is cancelled by its name.
 * - At start (`adopt`), the workers a previous server left whose jobs go on are taken over by
 *   name: their agents keep running and reconnect (they retry for a minute). Every other Slurm
 *   job of this installation and factory is cancelled, so no Slurm job is ever leaked; and an
 *   agent that cannot reach any server for a minute stops its job and exits, so a server that
 *   never comes back leaks nothing either.
 *
 * The pure parts live beside it: the jobs' names (worker-names.ts), the agent's batch script
 * (agent-script.ts), what one squeue answer says of a worker (tracked-worker.ts), what a restart
 * takes over (take-over.ts); a direct worker's run is direct-run.ts. This file does the I/O.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { chmodSync, mkdirSync, type FSWatcher } from 'node:fs';
import type {
  AgentPort,
  Factory,
  FactoryListener,
  LeftWorker,
  WorkerHandle,
  WorkerRequest,
} from '../factory.js';
import {
  directEnv,
  type DirectPaths,
  directPaths,
  DirectRun,
  directScript,
  prepareDirect,
  readExit,
  removeDirect,
  shellQuote,
  watchExits,
} from './direct-run.js';
import { AgentChannels } from '../agent-channels.js';
import { agentScript } from './agent-script.js';
import { ConcurrencyLimit } from './concurrency-limit.js';
import { EndedWatch } from './ended-watch.js';
import { CommandRunner } from './command-runner.js';
import { isEndedState, SlurmCli, type SlurmJob, type SubmitRequest } from './slurm-cli.js';
import { planTakeOver } from './take-over.js';
import { judge, submitting, takenOver, type Tracked } from './tracked-worker.js';
import { WorkerNames } from './worker-names.js';
import { gresOf } from './gres.js';
import { inherited, ownEnv, WorkerIdentities, type WorkerIdentity } from './worker-identities.js';
import type { UidRange } from '../../domain/uid-range.js';
import type { UnixUser } from '../unix-users.js';

export { shellQuote };

export interface SlurmFactoryOptions {
  name: string;
  capacity: number;
  listener: FactoryListener;
  /** Names this installation's jobs (the same on every replica). */
  installationId: string;
  partition?: string;
  account?: string;
  qos?: string;
  cpusPerTask?: number;
  /** Slurm's --time for each worker. */
  timeLimitSeconds: number;
  /** Further sbatch arguments, before the script. */
  sbatchArgs: string[];
  /** The cluster's slurm.conf (SLURM_CONF), when not the default. */
  slurmConf?: string;
  /** The command that starts `berth agent` on a node; `--server` and `--worker` are added. */
  agentCommand: string[];
  /** Where the agent makes its jobs' working directories on the node (its temporary directory). */
  workRoot?: string;
  /** Where a node's agents keep their images (`berth agent --image-cache`), and its bound. */
  imageCache?: string;
  imageCacheBytes?: number;
  /** How often squeue is asked about every worker (2 s). */
  pollSeconds?: number;
  /** How long a job may be missing from squeue after its sbatch returned before its worker is lost (30 s). */
  missingGraceSeconds?: number;
  /**
   * A PEM file the agents trust for the server's certificate (`berth agent --ca`), at this path on
   * the nodes: the factory's `ca`, else the server's tls.cert.
   */
  ca?: string;
  /**
   * A directory the server and every node see at the same path: set, each worker's batch script
   * runs its job itself, with no agent (direct-run.ts), and `agent` plays the agent's part.
   */
  sharedDir?: string;
  /** The controller's agent protocol, in-process: what direct workers are run through. */
  agent?: AgentPort;
  /** How many sbatch commands run at once (8): Slurm's controller takes them one at a time. */
  submitConcurrency?: number;
  /**
   * Set when berth submits as root (factories/isolation.ts): each worker member runs its jobs
   * under a uid of this range, the worker's alone among the factory's live workers.
   */
  uids?: UidRange;
  /** Projects whose workers Slurm runs as a user of the cluster (`sbatch --uid --gid`). */
  users?: Map<string, UnixUser>;
  /** Requests passed to Slurm as generic resources: resource name → GRES name (`gpu`, `gpu:a100`). */
  gres?: Record<string, string>;
}

export class SlurmFactory implements Factory {
  readonly kind = 'slurm';
  readonly inProcess = false;
  /**
   * Its agents register with a one-time credential instead of receiving the job's token; a direct
   * worker (sharedDir) has no agent, and its job gets its token in its batch script.
   */
  readonly registers: boolean;
  readonly name: string;
  readonly capacity: number;
  private readonly cli: SlurmCli;
  /** Where Slurm's commands run: a small helper process, cheaper to fork than the server. */
  private readonly runner = new CommandRunner();
  private readonly tracked = new Map<number, Tracked>();
  private readonly names: WorkerNames;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Destroys wait here for their Slurm jobs to end. */
  private readonly ended: EndedWatch;
  /** The adoption of what a previous server left, done before the first worker is made. */
  private adopted: Promise<unknown> | undefined;
  /** Sees direct workers' exit files as they are written (where the filesystem reports it). */
  private exits: FSWatcher | undefined;
  /** At most submitConcurrency sbatch commands at once. */
  private readonly submits: ConcurrencyLimit;
  /** Who each worker's jobs run as. */
  private readonly identities: WorkerIdentities;
  /** `berth exec` into its jobs, over their agents' channels (a direct worker has no agent). */
  readonly channels: AgentChannels | undefined;

  constructor(private readonly o: SlurmFactoryOptions) {
    this.name = o.name;
    this.capacity = o.capacity;
    if (o.sharedDir === undefined) this.channels = new AgentChannels();
    this.cli = new SlurmCli({ slurmConf: o.slurmConf, runner: this.runner });
    this.ended = new EndedWatch(this.cli);
    this.submits = new ConcurrencyLimit(o.submitConcurrency ?? 8);
    this.names = new WorkerNames(o.installationId, o.name);
    if (o.sharedDir !== undefined && !o.agent)
      throw new Error('a slurm factory with sharedDir needs the agent port');
    this.registers = o.sharedDir === undefined;
    this.identities = new WorkerIdentities(o.uids, o.users);
    if (o.sharedDir !== undefined) {
      mkdirSync(o.sharedDir, { recursive: true, mode: 0o700 });
      // Jobs that run as other users reach their own directories in it, but list nothing.
      if (this.identities.others) chmodSync(o.sharedDir, 0o711);
      const sharedDir = o.sharedDir;
      this.exits = watchExits(sharedDir, (name) => {
        const workerId = this.names.workerOf(name);
        const t = workerId === undefined ? undefined : this.tracked.get(workerId);
        if (workerId === undefined || !t?.run || t.ended || t.slurmId === undefined) return;
        if (readExit(directPaths(sharedDir, t.name)) === undefined) return; // not all written yet
        this.endDirect(workerId, t, 'COMPLETED', '', 'exit-file');
      });
    }
  }

  /**
   * A direct worker's run ended (`state`, on `host`): its run reports how; `how` tells its destroy
   * what is left to do (Tracked.ended).
   */
  private endDirect(
    workerId: number,
    t: Tracked,
    state: string,
    host: string,
    how: NonNullable<Tracked['ended']>,
  ): void {
    t.ended = how;
    void t.run!.end(state, host).catch((e: unknown) => {
      this.o.listener.workerLost(workerId, `Slurm job ${t.slurmId} could not be followed: ${String(e)}`);
    });
  }

  adopt(left: LeftWorker[]): Promise<Map<number, WorkerHandle>> {
    const adoption = this.takeOver(left);
    this.adopted = adoption.catch(() => {});
    return adoption;
  }

  /** Takes over the live Slurm jobs of `left`, by name, and cancels every other job of ours. */
  private async takeOver(left: LeftWorker[]): Promise<Map<number, WorkerHandle>> {
    const adopted = new Map<number, WorkerHandle>();
    let live: SlurmJob[];
    try {
      live = (await this.cli.jobs({ namePrefix: this.names.prefix })).filter((j) => !isEndedState(j.state));
    } catch {
      // Slurm unreachable now: none is taken over (the controller destroys them, cancelling each
      // by its id or name as Slurm answers again).
      return adopted;
    }
    const { sharedDir } = this.o;
    const exitLeft =
      sharedDir === undefined
        ? undefined
        : (name: string) => readExit(directPaths(sharedDir, name)) !== undefined;
    const plan = planTakeOver(live, left, this.names, exitLeft);
    const handles = new Map(left.map((l) => [l.workerId, l.handle]));
    for (const w of plan.adopt) {
      const held = this.identities.adopt(w.workerId, handles.get(w.workerId)?.uids);
      const t = takenOver(w.name, w.slurmId, w.job);
      // A direct worker's run goes on from where the last server left its output (`logged`), or
      // reports the end its job had while no server ran.
      if (w.jobId !== undefined)
        t.run = this.directRun(w.workerId, w.jobId, t, directPaths(this.o.sharedDir!, w.name), true);
      this.tracked.set(w.workerId, t);
      const direct = w.jobId === undefined ? {} : { jobId: w.jobId };
      adopted.set(w.workerId, {
        slurmJobId: w.slurmId,
        slurmJobName: w.name,
        ...direct,
        ...(held ? { uids: held } : {}),
      });
    }
    await Promise.all(
      plan.orphans.map(async (j) => {
        await this.cli.cancel(j.id).catch(() => {});
        if (this.o.sharedDir !== undefined) await removeDirect(directPaths(this.o.sharedDir, j.name));
      }),
    );
    this.schedulePoll();
    return adopted;
  }

  async create(req: WorkerRequest): Promise<WorkerHandle> {
    // The controller adopts first; a factory used on its own still removes what was left.
    await (this.adopted ??= this.takeOver([]).catch(() => {}));
    const id = this.identities.take(req.workerId, req.project, req.members);
    try {
      if (this.o.sharedDir !== undefined) return await this.createDirect(req, this.o.sharedDir, id);
      const registration = req.registration;
      if (!registration) throw new Error('a slurm worker needs a registration credential');
      const t = submitting(this.names.of(req.workerId));
      await this.submit(req.workerId, t, id, {
        script: agentScript(this.o, req.url, req.workerId, req.members, id.uids),
        nodes: req.members,
        gres: gresOf(this.o.gres, req.requests) || undefined,
        // A mapped user's agent passes its HOME, USER and LOGNAME on to its jobs.
        env: { BERTH_AGENT_CREDENTIAL: registration, ...(id.user ? ownEnv(id, '') : {}) },
      });
      return { slurmJobId: t.slurmId, slurmJobName: t.name, ...(id.uids ? { uids: id.uids } : {}) };
    } catch (e) {
      this.identities.giveBack(req.workerId);
      throw e;
    }
  }

  /** What a worker for these requests is allocated beyond its target (gres.ts): a pilot's match. */
  allocationKey(requests: Record<string, number> = {}): string {
    return gresOf(this.o.gres, requests);
  }

  /**
   * A direct worker: its working directory in sharedDir, where its output and exit status go too,
   * and a batch script that holds the job's variables and runs its command itself.
   */
  private async createDirect(
    req: WorkerRequest,
    sharedDir: string,
    id: WorkerIdentity,
  ): Promise<WorkerHandle> {
    if (req.members > 1)
      throw new Error(`factory ${this.name} runs jobs without an agent (sharedDir): a gang job needs one`);
    if (!req.token) throw new Error("a direct slurm worker needs the job's token");
    const spec = this.o.agent!.agentSpec(req.jobId);
    if (spec.artifacts?.length)
      throw new Error(`factory ${this.name} runs jobs without an agent (sharedDir): artifacts need one`);
    const t = submitting(this.names.of(req.workerId));
    const paths = directPaths(sharedDir, t.name);
    t.run = this.directRun(req.workerId, req.jobId, t, paths);
    const own = id.uids ? { uid: id.uids[0]!, gid: id.uids[0]! } : undefined;
    const slurmUser = id.user ? { uid: id.user.uid, gid: id.user.gid } : undefined;
    const env = {
      ...directEnv(spec, paths, { url: req.url, token: req.token, workerId: req.workerId }),
      ...ownEnv(id, paths.work),
    };
    await prepareDirect(paths, own ?? slurmUser, slurmUser);
    await this.submit(
      req.workerId,
      t,
      id,
      {
        script: directScript(spec, paths, env, own),
        output: paths.out,
        gres: gresOf(this.o.gres, req.requests) || undefined,
      },
      () => removeDirect(paths),
    );
    return {
      slurmJobId: t.slurmId,
      slurmJobName: t.name,
      jobId: req.jobId,
      ...(id.uids ? { uids: id.uids } : {}),
    };
  }

  /**
   * Submits worker `workerId`'s Slurm job with the factory's settings, and watches it. On failure
   * nothing of it is left: sbatch may have made the job before it failed (a timeout), and `undo`
   * removes what was made for it.
   */
  private async submit(
    workerId: number,
    t: Tracked,
    id: WorkerIdentity,
    job: Pick<SubmitRequest, 'script' | 'nodes' | 'output' | 'env' | 'gres'>,
    undo?: () => Promise<void>,
  ): Promise<void> {
    this.tracked.set(workerId, t);
    try {
      t.slurmId = await this.submits.run(() => {
        t.submittedAt = Date.now();
        return this.cli.submit({
          name: t.name,
          ...job,
          partition: this.o.partition,
          account: this.o.account,
          qos: this.o.qos,
          cpusPerTask: this.o.cpusPerTask,
          timeLimitSeconds: this.o.timeLimitSeconds,
          // Of the server's own environment (which may hold secrets) only what a job expects.
          inherit: inherited(id),
          ...(id.user ? { runAs: { uid: id.user.uid, gid: id.user.gid } } : {}),
          extraArgs: ['--no-requeue', ...this.o.sbatchArgs],
        });
      });
      t.knownAt = Date.now();
    } catch (e) {
      this.tracked.delete(workerId);
      await this.cli.cancelNamed(t.name).catch(() => {});
      await undo?.();
      throw e;
    }
    this.schedulePoll();
  }

  /** The server's side of a direct worker's run. */
  private directRun(
    workerId: number,
    jobId: number,
    t: Tracked,
    paths: DirectPaths,
    adopted = false,
  ): DirectRun {
    return new DirectRun({
      workerId,
      jobId,
      paths,
      adopted,
      agent: this.o.agent!,
      stop: (graceSeconds) => void this.stopDirect(t, graceSeconds),
      lost: (message) => this.o.listener.workerLost(workerId, `Slurm job ${t.slurmId ?? t.name}: ${message}`),
    });
  }

  /** Stops a direct worker's job: SIGTERM to the script and the command, SIGKILL after the grace. */
  private async stopDirect(t: Tracked, graceSeconds: number): Promise<void> {
    const id = t.slurmId;
    if (id === undefined) return;
    try {
      if (graceSeconds <= 0) return await this.cli.cancel(id);
      await this.cli.cancel(id, { signal: 'TERM', full: true });
      await delay(graceSeconds * 1000);
      if (t.ended === undefined) await this.cli.cancel(id, { signal: 'KILL', full: true });
    } catch {
      // Slurm unreachable: the job's own end, or its worker's destruction, stops it.
    }
  }

  async destroy(workerId: number, handle: WorkerHandle | null): Promise<void> {
    const t = this.tracked.get(workerId);
    this.tracked.delete(workerId);
    t?.run?.close();
    this.channels?.forget(workerId);
    const name = typeof handle?.slurmJobName === 'string' ? handle.slurmJobName : this.names.of(workerId);
    const direct = this.o.sharedDir !== undefined ? directPaths(this.o.sharedDir, name) : undefined;
    // A direct worker whose run has ended needs no scancel; destroyed still means its processes
    // are gone, so one whose exit file came first waits for Slurm to end its job (the script's
    // last line, then Slurm stops what the job left running).
    if (t?.ended === 'exit-file' && t.slurmId !== undefined) await this.ended.until(t.slurmId);
    else if (t?.ended !== 'slurm') await this.cancelAndWait(workerId, handle, t);
    // Its Slurm job is over (else the wait above threw): a daemon its job left under its uid is
    // ended by the next worker's agent, or script, that gets the uid on that node.
    this.identities.giveBack(workerId);
    if (direct) await removeDirect(direct);
  }

  private async cancelAndWait(
    workerId: number,
    handle: WorkerHandle | null,
    t: Tracked | undefined,
  ): Promise<void> {
    const known = typeof handle?.slurmJobId === 'string' ? handle.slurmJobId : t?.slurmId;
    // Recorded before a crash, never told its Slurm id: found by its name.
    const ids = known ? [known] : await this.cli.cancelNamed(this.names.of(workerId));
    if (known) await this.cli.cancel(known);
    // Destroyed means its processes are gone: wait while Slurm still runs or completes it
    // (SIGTERM, then SIGKILL after KillWait). Past the deadline the controller tries again later.
    await Promise.all(ids.map((id) => this.ended.until(id)));
  }

  /**
   * When the worker's Slurm time limit ends: as squeue said while it ran, else no earlier than
   * its submission plus the limit (it cannot have started before it was submitted).
   */
  endsAt(workerId: number): number | null | undefined {
    const t = this.tracked.get(workerId);
    if (!t) return undefined;
    return t.endsAt !== undefined ? t.endsAt : t.submittedAt + this.o.timeLimitSeconds * 1000;
  }

  async close(): Promise<void> {
    this.exits?.close();
    this.channels?.close();
    this.runner.close();
    for (const t of this.tracked.values()) t.run?.close();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.tracked.clear();
    await this.adopted;
  }

  private schedulePoll(): void {
    if (this.timer || this.tracked.size === 0) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        void this.poll().finally(() => this.schedulePoll());
      },
      (this.o.pollSeconds ?? 2) * 1000,
    );
    this.timer.unref();
  }

  /** One squeue for every worker: pending reasons, and workers whose Slurm job is gone. */
  async poll(): Promise<void> {
    if (this.polling || this.tracked.size === 0) return;
    this.polling = true;
    try {
      let jobs: SlurmJob[];
      const asked = Date.now();
      try {
        jobs = await this.cli.jobs({ namePrefix: this.names.prefix });
      } catch {
        return; // Slurm's controller unreachable: heartbeats still guard running workers
      }
      const byWorker = new Map(jobs.map((j) => [this.names.workerOf(j.name), j]));
      const grace = (this.o.missingGraceSeconds ?? 30) * 1000;
      const reads: Promise<void>[] = [];
      for (const [workerId, t] of this.tracked) {
        const j = byWorker.get(workerId);
        const v = judge(t, j, asked, grace);
        if (v.kind === 'unknown') continue;
        if (j) t.seen = true;
        if (v.kind === 'gone' && t.run) {
          // A direct worker's end is its job's: the exit status it left says how it ended.
          this.endDirect(workerId, t, v.state, v.host, v.how);
        } else if (v.kind === 'gone') {
          this.tracked.delete(workerId);
          this.o.listener.workerLost(workerId, `Slurm job ${t.slurmId} ${v.lost}`);
        } else {
          const run = t.run;
          if (run && v.running)
            reads.push(run.start(v.host).then(() => (run.done ? undefined : run.readOutput())));
          if (v.endsAt !== undefined) t.endsAt = v.endsAt;
          // Said at every poll while it waits, not only when it changes: a listener that did not
          // know the worker yet — one taken over at start, polled before the controller had
          // restored its job — hears it at the next poll (once dropped, a job showed its
          // takeover message instead of Slurm's reason for as long as Slurm kept it waiting).
          if (v.waiting !== null || t.waiting !== null) {
            t.waiting = v.waiting;
            this.o.listener.workerWaiting?.(
              workerId,
              v.waiting === null ? null : `Slurm keeps job ${t.slurmId} pending: ${v.waiting}`,
            );
          }
        }
      }
      await Promise.all(reads.map((r) => r.catch(() => {})));
    } finally {
      this.polling = false;
    }
  }
}
