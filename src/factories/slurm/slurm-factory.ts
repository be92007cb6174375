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
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Factory, FactoryListener, LeftWorker, WorkerHandle, WorkerRequest } from '../factory.js';
import { isEndedState, SlurmCli, type SlurmJob } from './slurm-cli.js';

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
  /** How often squeue is asked about every worker (2 s). */
  pollSeconds?: number;
  /** How long a submitted job may be missing from squeue before its worker is lost (30 s). */
  missingGraceSeconds?: number;
  /**
   * A PEM file the agents trust for the server's certificate (`berth agent --ca`), at this path on
   * the nodes: the factory's `ca`, else the server's tls.cert.
   */
  ca?: string;
}

/** What a job gets of the server's environment (jobs run with PATH, HOME, their locale). */
const INHERITED = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'TZ', 'TMPDIR'];
/** How long destroy waits for a cancelled Slurm job to end: past Slurm's default KillWait (30 s). */
const DESTROY_WAIT_MS = 45_000;
/** How often squeue is asked whether the Slurm jobs of destroys in progress have ended. */
const ENDED_POLL_MS = 200;

interface EndWaiter {
  done: () => void;
  fail: (e: Error) => void;
  deadline: number;
}

interface Tracked {
  name: string;
  slurmId: string | undefined;
  submittedAt: number;
  seen: boolean;
  /** The pending reason last reported (null: not pending). */
  waiting: string | null;
  /** When its time limit ends, as squeue last said while it ran (null: no limit). */
  endsAt?: number | null;
}

export class SlurmFactory implements Factory {
  readonly kind = 'slurm';
  readonly inProcess = false;
  /** Its agents register with a one-time credential instead of receiving the job's token. */
  readonly registers = true;
  readonly name: string;
  readonly capacity: number;
  private readonly cli: SlurmCli;
  private readonly tracked = new Map<number, Tracked>();
  private readonly prefix: string;
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Slurm jobs that destroys wait to see ended (their last state, and the waiters). */
  private readonly ending = new Map<string, { state: string; waiters: EndWaiter[] }>();
  private watchingEnds = false;
  /** The adoption of what a previous server left, done before the first worker is made. */
  private adopted: Promise<unknown> | undefined;

  constructor(private readonly o: SlurmFactoryOptions) {
    this.name = o.name;
    this.capacity = o.capacity;
    this.cli = new SlurmCli({ slurmConf: o.slurmConf });
    this.prefix = `berth-${o.installationId}-${o.name}-w`;
  }

  private jobName(workerId: number): string {
    return `${this.prefix}${workerId}`;
  }

  private workerOf(job: SlurmJob): number | undefined {
    if (!job.name.startsWith(this.prefix)) return undefined;
    const id = Number(job.name.slice(this.prefix.length));
    return Number.isSafeInteger(id) && id > 0 ? id : undefined;
  }

  adopt(left: LeftWorker[]): Promise<Map<number, WorkerHandle>> {
    const adoption = this.takeOver(left);
    this.adopted = adoption.catch(() => {});
    return adoption;
  }

  /** Takes over the live Slurm jobs of `left`, by name, and cancels every other job of ours. */
  private async takeOver(left: LeftWorker[]): Promise<Map<number, WorkerHandle>> {
    const adopted = new Map<number, WorkerHandle>();
    let jobs: SlurmJob[];
    try {
      jobs = (await this.cli.jobs({ namePrefix: this.prefix })).filter((j) => !isEndedState(j.state));
    } catch {
      // Slurm unreachable now: none is taken over (the controller destroys them, cancelling each
      // by its id or name as Slurm answers again).
      return adopted;
    }
    const wanted = new Set(left.map((w) => w.workerId));
    const orphans: SlurmJob[] = [];
    for (const j of jobs) {
      const workerId = this.workerOf(j);
      if (workerId === undefined || !wanted.has(workerId) || adopted.has(workerId)) {
        orphans.push(j);
        continue;
      }
      this.tracked.set(workerId, {
        name: j.name,
        slurmId: j.id,
        submittedAt: Date.now(),
        seen: true,
        waiting: null,
        ...(j.state === 'RUNNING' ? { endsAt: endOf(j) } : {}),
      });
      adopted.set(workerId, { slurmJobId: j.id, slurmJobName: j.name });
    }
    await Promise.all(orphans.map((j) => this.cli.cancel(j.id).catch(() => {})));
    this.schedulePoll();
    return adopted;
  }

  async create(req: WorkerRequest): Promise<WorkerHandle> {
    if (!req.registration) throw new Error('a slurm worker needs a registration credential');
    // The controller adopts first; a factory used on its own still removes what was left.
    await (this.adopted ??= this.takeOver([]).catch(() => {}));
    const name = this.jobName(req.workerId);
    const t: Tracked = { name, slurmId: undefined, submittedAt: Date.now(), seen: false, waiting: null };
    this.tracked.set(req.workerId, t);
    const agent = [
      ...this.o.agentCommand,
      'agent',
      '--server',
      req.url,
      '--worker',
      String(req.workerId),
      ...(this.o.workRoot ? ['--work-root', this.o.workRoot] : []),
      ...(this.o.ca ? ['--ca', this.o.ca] : []),
    ];
    // A gang: one allocation of `members` nodes, and an agent on each through srun, which tells
    // each its rank (SLURM_PROCID). Slurm gives all the nodes at once, or none.
    const gang = req.members > 1;
    const run = gang ? ['srun', '--kill-on-bad-exit=0', ...agent] : agent;
    try {
      t.slurmId = await this.cli.submit({
        name,
        script: `#!/bin/sh\nexec ${run.map(shellQuote).join(' ')}\n`,
        nodes: req.members,
        partition: this.o.partition,
        account: this.o.account,
        qos: this.o.qos,
        cpusPerTask: this.o.cpusPerTask,
        timeLimitSeconds: this.o.timeLimitSeconds,
        env: { BERTH_AGENT_CREDENTIAL: req.registration },
        // Of the server's own environment (which may hold secrets) only what a job expects.
        inherit: INHERITED.filter((k) => process.env[k] !== undefined),
        extraArgs: ['--no-requeue', ...this.o.sbatchArgs],
      });
    } catch (e) {
      this.tracked.delete(req.workerId);
      // sbatch may have made the job before it failed (a timeout): none may be left behind.
      await this.cancelNamed(name).catch(() => {});
      throw e;
    }
    this.schedulePoll();
    return { slurmJobId: t.slurmId, slurmJobName: name };
  }

  async destroy(workerId: number, handle: WorkerHandle | null): Promise<void> {
    const t = this.tracked.get(workerId);
    this.tracked.delete(workerId);
    const known = typeof handle?.slurmJobId === 'string' ? handle.slurmJobId : t?.slurmId;
    // Recorded before a crash, never told its Slurm id: found by its name.
    const ids = known ? [known] : await this.cancelNamed(this.jobName(workerId));
    if (known) await this.cli.cancel(known);
    // Destroyed means its processes are gone: wait while Slurm still runs or completes it
    // (SIGTERM, then SIGKILL after KillWait). Past the deadline the controller tries again later.
    await Promise.all(ids.map((id) => this.untilEnded(id)));
  }

  /** Resolves once Slurm job `id` has ended (or is gone); watched with every other one by one squeue. */
  private untilEnded(id: string): Promise<void> {
    return new Promise<void>((done, fail) => {
      const waiters = this.ending.get(id) ?? { state: 'unknown', waiters: [] };
      waiters.waiters.push({ done, fail, deadline: Date.now() + DESTROY_WAIT_MS });
      this.ending.set(id, waiters);
      if (!this.watchingEnds) {
        this.watchingEnds = true;
        void this.watchEnds();
      }
    });
  }

  /** While destroys wait, one squeue call every 200 ms for all of their Slurm jobs. */
  private async watchEnds(): Promise<void> {
    for (;;) {
      if (this.ending.size === 0) {
        this.watchingEnds = false;
        return;
      }
      const ids = [...this.ending.keys()];
      let live: Map<string, string> | undefined;
      try {
        live = new Map(
          (await this.cli.jobs({ ids })).filter((j) => !isEndedState(j.state)).map((j) => [j.id, j.state]),
        );
      } catch {
        live = undefined; // Slurm unreachable this time: asked again, deadlines still run
      }
      const now = Date.now();
      for (const id of ids) {
        const entry = this.ending.get(id)!;
        if (live && !live.has(id)) {
          this.ending.delete(id);
          for (const w of entry.waiters) w.done();
          continue;
        }
        entry.state = live?.get(id) ?? entry.state;
        const due = entry.waiters.filter((w) => now > w.deadline);
        if (due.length === 0) continue;
        entry.waiters = entry.waiters.filter((w) => now <= w.deadline);
        if (entry.waiters.length === 0) this.ending.delete(id);
        const err = new Error(`Slurm job ${id} (${entry.state}) did not end after scancel`);
        for (const w of due) w.fail(err);
      }
      await delay(ENDED_POLL_MS);
    }
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

  /** Cancels the jobs named `name`; their ids. */
  private async cancelNamed(name: string): Promise<string[]> {
    const ids = (await this.cli.jobs({ namePrefix: name })).filter((j) => j.name === name).map((j) => j.id);
    await Promise.all(ids.map((id) => this.cli.cancel(id)));
    return ids;
  }

  async close(): Promise<void> {
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
      try {
        jobs = await this.cli.jobs({ namePrefix: this.prefix });
      } catch {
        return; // Slurm's controller unreachable: heartbeats still guard running workers
      }
      const byWorker = new Map<number, SlurmJob>();
      for (const j of jobs) {
        const w = this.workerOf(j);
        if (w !== undefined) byWorker.set(w, j);
      }
      const now = Date.now();
      for (const [workerId, t] of this.tracked) {
        if (t.slurmId === undefined) continue; // still being submitted
        const j = byWorker.get(workerId);
        if (j) t.seen = true;
        const missing = !j && (t.seen || now - t.submittedAt > (this.o.missingGraceSeconds ?? 30) * 1000);
        if (missing || (j && isEndedState(j.state))) {
          this.tracked.delete(workerId);
          const how = j
            ? `ended ${j.state}${j.reason && j.reason !== 'None' ? ` (${j.reason})` : ''}`
            : 'is gone';
          this.o.listener.workerLost(workerId, `Slurm job ${t.slurmId} ${how}`);
          continue;
        }
        if (j?.state === 'RUNNING') t.endsAt = endOf(j);
        const waiting = j?.state === 'PENDING' ? j.reason || 'pending' : null;
        if (waiting !== t.waiting) {
          t.waiting = waiting;
          this.o.listener.workerWaiting?.(
            workerId,
            waiting === null ? null : `Slurm keeps job ${t.slurmId} pending: ${waiting}`,
          );
        }
      }
    } finally {
      this.polling = false;
    }
  }
}

/** When a running Slurm job's time limit ends (null: it has none). */
function endOf(j: SlurmJob): number | null {
  return j.timeLeftSeconds === null ? null : Date.now() + j.timeLeftSeconds * 1000;
}

/** `s` as one word for /bin/sh. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
