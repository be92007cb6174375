/**
 * Pilot workers, for targets with `reuse: true`: a worker whose job ended as its agent reported
 * waits, idle, for the next job of its target instead of being destroyed, so that one Slurm job
 * runs many berth jobs one after another and short jobs stop paying Slurm's start-up each time.
 *
 * - An idle pilot belongs to no job, but still counts against its factory's capacity.
 * - A job that reaches the worker step takes an idle pilot of its target — never one whose own
 *   time (a Slurm job's time limit) ends before the job's timeout and grace would: a job without
 *   a timeout always gets a fresh worker, with its whole time limit.
 * - A pilot is destroyed once idle for its target's `idleTimeout`, when its factory is full and
 *   a job that cannot use it waits for a worker, or when it is lost.
 * - Its agent long-polls for its next job (`next`), with a credential that lives as long as the
 *   worker; the job's own token is made when the job is handed over (service/agent-registration).
 *
 * Deadlock freedom is untouched: a pilot is taken as a worker is, as the last step of a job's
 * acquisition, and an idle pilot is held by no job, so no job waits while holding one.
 */
import type { StartResponse } from '../agent/protocol.js';
import { newToken } from '../domain/tokens.js';
import { insertJobToken } from '../store/queries/tokens.js';
import { updateWorker } from '../store/queries/workers.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import { holdingKey, type Holding, type TrackedJob } from './model.js';
import type { Pool } from './pool.js';
import { markRunning, startSpec } from './run-start.js';
import { StopSignals } from './stop-signals.js';
import type { PilotNext } from './port.js';

interface IdlePilot {
  holding: Holding;
  target: string;
  /**
   * The project whose job it ran first: a pilot serves that project alone (docs/SECURITY.md).
   * What one job leaves on its worker — files, its uid's processes, what it read of the agent —
   * must not reach another tenant's job.
   */
  project: string;
  /** What its Slurm job was allocated beyond its target (`gpu:1`): a job must ask for the same. */
  allocation: string;
  since: number;
}

export class Pilots {
  /** Idle pilots by worker id, oldest first. */
  private readonly idle = new Map<number, IdlePilot>();
  /** Jobs handed to a pilot whose agent has not asked for them yet (and since when), by worker. */
  private readonly handedOver = new Map<
    number,
    { jobId: number; at: number; adopted?: true; token?: string; start?: StartResponse }
  >();
  /** Idle pilots being destroyed, per factory: still counted in use until confirmed. */
  private readonly retiring = new Map<string, number>();
  /** Pilots being handed a job (its record being written): their agent waits for it. */
  private readonly handing = new Set<number>();
  /** Pilots destroyed while idle, with why: told to their agent if it asks. */
  private readonly retired = new Map<number, string>();
  private readonly asks = new StopSignals();
  /** The server is stopping: idle pilots are told to stop (the next server would cancel them). */
  private closed = false;

  constructor(
    private readonly core: ControllerCore,
    private readonly holdings: Holdings,
  ) {}

  /** Whether worker `workerId` is a pilot waiting, idle, for its next job. */
  isIdle(workerId: number): boolean {
    return this.idle.has(workerId);
  }

  private reusable(target: string): boolean {
    return this.core.o.targets[target]?.reuse === true;
  }

  /**
   * The job's run ended as its agent reported: a worker of a reusable target is kept for the next
   * job (detached from this one, so that its end does not destroy it). Whether it was kept.
   */
  keep(job: TrackedJob): boolean {
    if (!this.reusable(job.target) || job.workerId === null || job.workers > 1) return false;
    const h = this.holdings.get('worker', job.workerId);
    if (!h || h.destroying || h.jobId !== job.id) return false;
    job.holdings.delete(holdingKey('worker', h.id));
    this.handedOver.delete(h.id); // whatever was left of an adoption: this job has ended
    this.idle.set(h.id, {
      holding: h,
      target: job.target,
      project: (h.serves ??= job.project),
      allocation: this.allocationOf(h.provider, job),
      since: this.core.o.now(),
    });
    this.core.wake();
    return true;
  }

  /**
   * A job adopted after a restart, admitted with a worker of a reusable target: that worker may be
   * a pilot that was handed the job and asks for it. (It may as well be a fresh worker still
   * pending in Slurm, which registers instead: so no deadline for the ask.)
   */
  adopted(job: TrackedJob): void {
    if (this.reusable(job.target) && job.workerId !== null && job.state === 'admitted')
      this.handedOver.set(job.workerId, { jobId: job.id, at: this.core.o.now(), adopted: true });
  }

  /**
   * Whether the pilot may take the job: of its project, and with time for it (its timeout and
   * grace end before the worker does).
   */
  private fits(job: TrackedJob, p: IdlePilot): boolean {
    if (job.project !== p.project) return false;
    // A pilot allocated one GPU cannot run a job that needs two, nor give one to a job that needs none.
    if (this.allocationOf(p.holding.provider, job) !== p.allocation) return false;
    // A gang needs all its workers from one allocation: never a pilot.
    if (job.timeoutSeconds === null || job.workers > 1) return false;
    const endsAt = this.core.o.factories.get(p.holding.provider)?.endsAt?.(p.holding.id);
    if (endsAt === undefined) return false;
    if (endsAt === null) return true;
    const needs = (job.timeoutSeconds + this.core.o.graceSeconds) * 1000;
    return endsAt - this.core.o.now() >= needs;
  }

  /** What a worker of factory `provider` made for the job would be allocated (its `--gres`). */
  private allocationOf(provider: string, job: TrackedJob): string {
    return this.core.o.factories.get(provider)?.allocationKey?.(job.requests) ?? '';
  }

  /**
   * Hands idle pilots to the jobs waiting in the factory's pool for a worker of their target; then,
   * while the pool is full and jobs still wait, destroys idle pilots none of them can use.
   */
  dispatch(pool: Pool<TrackedJob>): void {
    if (this.idle.size === 0) return;
    // A gang at the head of the line cannot use a pilot, and nobody overtakes it: the pilots are
    // only in its way (retired below, so that its workers fit).
    const gangFirst = (pool.waitlist.peek()?.workers ?? 1) > 1;
    for (const p of this.idle.values()) {
      if (gangFirst) break;
      if (p.holding.provider !== pool.name) continue;
      const job = pool.waitlist.find((j) => j.target === p.target && this.fits(j, p));
      if (!job) continue;
      pool.waitlist.remove(job.id);
      job.waitingIn = null;
      this.core.background.run(this.handOver(job, p), `pilot for job ${job.id}`);
    }
    const free = pool.capacity - pool.inUse + (this.retiring.get(pool.name) ?? 0);
    let wanted = 0;
    for (const j of pool.waitlist.values()) wanted += pool.unitsOf(j);
    let surplus = wanted - Math.max(0, free);
    for (const p of this.idle.values()) {
      if (surplus <= 0) break;
      if (p.holding.provider !== pool.name) continue;
      this.retire(p.holding.id, 'its factory is full and the jobs waiting cannot use it');
      surplus--;
    }
  }

  /** A job about to wait for a worker: an idle pilot of its target that fits, taken at once. */
  take(job: TrackedJob): boolean {
    for (const p of this.idle.values()) {
      if (p.target !== job.target || !this.fits(job, p)) continue;
      this.core.background.run(this.handOver(job, p), `pilot for job ${job.id}`);
      return true;
    }
    return false;
  }

  /**
   * Gives the job to the pilot. Its token, and its start, share the hand-over's commit: the agent
   * gets the job, its token and what to run in one answer, and runs it at once. A job in an image
   * is handed over without its start: its agent pulls the image first (no heartbeat is owed
   * meanwhile), then starts it.
   */
  private async handOver(job: TrackedJob, p: IdlePilot): Promise<void> {
    const { o, jobs, journal } = this.core;
    const h = p.holding;
    this.idle.delete(h.id);
    this.handing.add(h.id);
    const previous = h.jobId;
    h.jobId = job.id;
    this.holdings.attach(h, job);
    jobs.assignWorker(job, h.id);
    job.mayHoldToken = true;
    const token = newToken('job');
    const now = o.now();
    let start: StartResponse | undefined;
    try {
      const handed = journal.write(async ({ db, event }) => {
        await updateWorker(db, h.id, { jobId: job.id }, now);
        await insertJobToken(db, token, job.id, `job ${job.id} (worker ${h.id})`, now);
        await event(job, 'worker-reused', `worker ${h.id} reused: it ran job ${previous} before`);
      });
      // Written with the hand-over, in the same commit.
      const started = job.image
        ? Promise.resolve()
        : markRunning(this.core, job).then(
            () => {
              job.lastHeartbeat = o.now();
              start = startSpec(this.core, this.holdings, job, { rank: 0, host: '' });
            },
            // Stopped meanwhile: the agent is given the job without its start, and its own start
            // call is refused as any other would be.
            () => {},
          );
      await Promise.all([handed, started]);
    } finally {
      this.handing.delete(h.id);
    }
    this.handedOver.set(h.id, { jobId: job.id, at: o.now(), token, ...(start ? { start } : {}) });
    this.asks.notify(h.id);
  }

  /** Destroys an idle pilot; its agent, if it asks, is told to stop. */
  retire(workerId: number, why: string): void {
    const p = this.idle.get(workerId);
    if (!p) return;
    this.idle.delete(workerId);
    this.retired.set(workerId, why);
    this.asks.notify(workerId);
    const factory = p.holding.provider;
    this.retiring.set(factory, (this.retiring.get(factory) ?? 0) + 1);
    void this.holdings.destroy(p.holding).finally(() => {
      this.retiring.set(factory, (this.retiring.get(factory) ?? 1) - 1);
      this.retired.delete(workerId); // its agent is gone with it (or told "not idle" if it asks)
    });
  }

  /** An idle pilot was lost (its Slurm job ended): destroyed. Whether it was one. */
  lost(workerId: number, message: string): boolean {
    if (!this.idle.has(workerId)) return false;
    this.retire(workerId, `lost: ${message}`);
    return true;
  }

  /**
   * Destroys the pilots idle for longer than their target's idleTimeout; returns the pilots handed
   * a job that their agent did not ask for within the heartbeat period (lost, for the caller).
   */
  expire(now: number): number[] {
    for (const p of this.idle.values()) {
      const seconds = this.core.o.targets[p.target]?.idleTimeoutSeconds ?? 300;
      if (now - p.since > seconds * 1000) this.retire(p.holding.id, `idle for ${seconds}s`);
    }
    const silent: number[] = [];
    for (const [workerId, { at, adopted }] of this.handedOver)
      if (!adopted && now - at > this.core.o.heartbeatSeconds * 1000) {
        this.handedOver.delete(workerId);
        silent.push(workerId);
      }
    return silent;
  }

  /** A pilot's agent asks for its next job: long-polled up to `waitMs`. */
  async next(workerId: number, waitMs: number): Promise<PilotNext> {
    const answer = (): PilotNext | undefined => {
      const handed = this.handedOver.get(workerId);
      if (handed !== undefined) {
        this.handedOver.delete(workerId);
        const { jobId, token, start } = handed;
        return { jobId, ...(token ? { token } : {}), ...(start ? { start } : {}) };
      }
      const why = this.retired.get(workerId);
      if (why !== undefined) {
        this.retired.delete(workerId);
        return { stop: why };
      }
      if (this.handing.has(workerId)) return undefined;
      if (this.idle.has(workerId)) return this.closed ? { stop: 'the server is stopping' } : undefined;
      return { stop: 'the worker has no job and is not idle' };
    };
    const now = answer();
    if (now || waitMs <= 0) return now ?? { wait: true };
    await this.asks.wait(workerId, waitMs);
    return answer() ?? { wait: true };
  }

  /** The server is stopping: every long poll ends, and idle pilots are told to stop. */
  close(): void {
    this.closed = true;
    this.asks.notifyAll();
  }
}
