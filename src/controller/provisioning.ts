/**
 * Provisioning: an admitted job acquires its managed resources one at a time in lexicographic
 * order of type, then a worker — each by waiting in that well's or factory's pool, being
 * recorded (`creating`), made, and confirmed (`ready`).
 *
 * Acquisition order (no deadlock): quota first (admission by the scheduler), then each managed
 * resource in lexicographic order of type, then a worker. A job keeps what it has while it waits
 * for the next thing, and waits only for things ordered after everything it holds. A cycle of
 * waiting jobs would need some job to wait for a thing ordered before one it holds, which never
 * happens: so no deadlock can form. (The buildomat case: with capacity 1 for resource R and for
 * the factory, a job holding the worker already holds R; nobody holds the worker while waiting
 * for R.)
 *
 * Gang jobs (`workers: N`) keep this: their N workers are the last step, taken from the factory's
 * pool in one step — all N units at once, or none while the gang waits (pool.ts) — so a gang
 * never holds some of its workers while it waits for the rest. A job waiting in a factory's pool
 * holds nothing of that pool, and everything it holds is ordered before it; a job holding
 * workers waits for nothing more. The wait-for graph still only points forward in the order: no
 * cycle. (Were a gang to take its workers one by one, two gangs of 2 on a factory of capacity 2
 * could each hold one and wait for the other's forever.) A gang that can never fit (N above the
 * factory's capacity) is refused at submission, so the head of a pool's line always fits once the
 * workers ahead of it are destroyed.
 *
 * Backfill at a pool (pool.ts) keeps both: a job handed a unit ahead of a waiting head takes it in
 * the same one step, holding nothing of the pool before, so the wait-for graph still points
 * forward; and it is handed one only when, by its timeout, it gives it back before the head's
 * reserved start (or leaves the head enough without it), so the head is not delayed past the
 * reservation by those jobs — only by jobs that outrun their timeouts, which are then stopped.
 * A devices wait (a factory's GPUs) is the same order's last step too: devices go with the worker.
 */
import type { FinishRequest } from '../agent/protocol.js';
import { hashToken, newToken } from '../domain/tokens.js';
import type { Factory } from '../factories/factory.js';
import { pinJobImage, updateJob } from '../store/queries/jobs.js';
import { formatImageReference, parseImageReference, pinned } from '../images/reference.js';
import { RegistryError } from '../images/skopeo.js';
import { insertInstance, updateInstance } from '../store/queries/resource-instances.js';
import { deleteJobTokens, insertJobToken } from '../store/queries/tokens.js';
import { insertWorker, updateWorker } from '../store/queries/workers.js';
import { WellError, type Well } from '../wells/well.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { Holding, TrackedJob } from './model.js';
import type { FailureKind } from '../domain/retry.js';
import type { Pilots } from './pilots.js';
import { devicesText } from '../domain/devices.js';
import { workerRequests } from './tracked-jobs.js';

/** Attempts to create one resource instance before the job fails with the well's reason. */
const MAX_CREATE_ATTEMPTS = 3;

/** What becomes of a job whose worker or resource could not be made (the life cycle's call). */
export interface ProvisioningOutcomes {
  /** The run ended before it began (the worker could not be made: the infrastructure's failure). */
  endRun(job: TrackedJob, result: FinishRequest, charge: FailureKind): Promise<void>;
  /**
   * The job cannot get a resource (or its image): it releases its quota and fails with `reason`,
   * retried unless `final`.
   */
  failAdmitted(job: TrackedJob, reason: string, final?: boolean): Promise<void>;
}

export class Provisioning {
  constructor(
    private readonly core: ControllerCore,
    private readonly holdings: Holdings,
    private readonly pilots: Pilots,
    private readonly outcomes: () => ProvisioningOutcomes,
  ) {}

  /** Puts an admitted job in line for the next thing it needs, in the global order. */
  advance(job: TrackedJob): void {
    // Its image pinned first, or checked when it came pinned: the registry's answer for its
    // project, asked while the job holds nothing but quota.
    if (job.image !== undefined && !job.imageChecked) return this.pinImage(job);
    const pool =
      job.acquired < job.resources.length
        ? this.core.pools.get('resource', job.resources[job.acquired]!)
        : this.core.pools.get('factory', this.core.o.targets[job.target]?.factory ?? '');
    if (!pool) return; // checked at submission; a config change may still remove it
    // Its worker: an idle pilot of its target, if one fits, without waiting in line — unless a
    // gang waits at the head of the line, which nobody overtakes.
    const gangWaits = (pool.waitlist.peek()?.workers ?? 1) > 1;
    if (pool.kind === 'factory' && !gangWaits && this.pilots.take(job)) return;
    job.waitingIn = pool;
    pool.waitlist.add(job);
  }

  leaveWaitlist(job: TrackedJob): void {
    job.waitingIn?.leave(job.id);
    job.waitingIn = null;
  }

  /** Hands out resource instances and workers wherever a pool has room. */
  dispatch(): void {
    const { o } = this.core;
    for (const pool of this.core.pools.all()) {
      if (pool.kind === 'factory') this.pilots.dispatch(pool);
      for (let job = pool.take(); job; job = pool.take()) {
        job.waitingIn = null;
        const acquired = job;
        const work =
          pool.kind === 'resource'
            ? this.createInstance(o.wells.get(pool.name)!, acquired)
            : this.createWorker(o.factories.get(pool.name)!, acquired, pool.wentAheadOf);
        this.core.background.run(work, `${pool.key} for job ${acquired.id}`);
      }
    }
  }

  /**
   * Whether the job still wants what it is being given (not cancelled, preempted or finished):
   * `attempt`, its attempts when the giving began, tells a job requeued meanwhile (and perhaps
   * admitted again, wanting a worker of its own for its new attempt) from one that waits still.
   */
  private stillWants(job: TrackedJob, attempt?: number): boolean {
    return (
      this.core.jobs.unfinished(job.id) === job &&
      job.state === 'admitted' &&
      !job.stopping &&
      job.ending === null &&
      (attempt === undefined || job.attempts === attempt)
    );
  }

  /**
   * Asks the registry which digest the job's image stands for (with its project's login), records
   * it in the job's spec (every later attempt runs those bytes) and puts the job in line for the
   * rest. A job given a digest is asked about too: whether its project may read that image. An
   * image or tag the registry does not have, or credentials it refuses, fail the job at once with
   * the registry's words; a registry that cannot be reached is the infrastructure's failure.
   */
  private pinImage(job: TrackedJob): void {
    if (job.pinning) return;
    job.pinning = true;
    const work = this.pin(job, job.attempts).finally(() => (job.pinning = false));
    this.core.background.run(work, `image of job ${job.id}`);
  }

  private async pin(job: TrackedJob, attempt: number): Promise<void> {
    const { o, journal } = this.core;
    const ref = parseImageReference(job.image!);
    const name = formatImageReference(ref);
    let digest: string;
    try {
      if (!o.images) throw new Error('this server resolves no images');
      digest = await o.images.resolve(ref, job.project);
    } catch (e) {
      if (!this.stillWants(job, attempt)) return;
      const message = e instanceof Error ? e.message : String(e);
      const final = e instanceof RegistryError && e.jobsFault;
      await this.outcomes().failAdmitted(job, `image ${name}: ${message}`, final);
      return;
    }
    if (!this.stillWants(job, attempt)) return;
    const full = formatImageReference(pinned(ref, digest));
    if (full !== job.image) {
      await journal.write(async ({ db, event }) => {
        await pinJobImage(db, job.id, full);
        await event(job, 'image-pinned', `image ${name} is ${digest}`);
      });
      job.image = full;
    }
    job.imageChecked = true;
    if (!this.stillWants(job, attempt)) return;
    this.advance(job);
    this.core.wake();
  }

  private async createInstance(well: Well, job: TrackedJob): Promise<void> {
    const { o, journal } = this.core;
    const now = o.now();
    const attempt = job.attempts;
    const h = await this.holdings.record(job, 'instance', well.type, async ({ db, event }) => {
      const instanceId = await insertInstance(db, job.id, well.type, now);
      await updateJob(db, job.id, { reason: `acquiring resource ${well.type} (instance ${instanceId})` });
      await event(job, 'resource-creating', `creating resource ${well.type} (instance ${instanceId})`);
      return instanceId;
    });
    const id = h.id;
    if (!this.stillWants(job, attempt)) return this.holdings.destroy(h); // cancelled or evicted meanwhile
    const req = { instanceId: id, jobId: job.id, project: job.project, type: well.type };
    const began = performance.now();
    try {
      h.metadata = await well.create(req);
      o.metrics?.created('instance', well.type, (performance.now() - began) / 1000);
    } catch (e) {
      o.metrics?.created('instance', well.type, null);
      await this.instanceFailed(job, h, e);
      return;
    }
    await journal.write(async ({ db, event }) => {
      await updateInstance(db, id, { state: 'ready', metadata: h.metadata }, o.now());
      await event(job, 'resource-ready', `resource ${well.type} ready (instance ${id})`);
    });
    if (!this.stillWants(job, attempt)) {
      // Cancelled or evicted while the well worked: let go of it at once.
      if (!h.destroying) void this.holdings.destroy(h);
      return;
    }
    job.acquired++;
    job.createFailures = 0;
    this.advance(job);
    this.core.wake();
  }

  /** A well could not create: retry a few times, then fail the job with the well's reason. */
  private async instanceFailed(job: TrackedJob, h: Holding, e: unknown): Promise<void> {
    const { o, journal } = this.core;
    const message = e instanceof Error ? e.message : String(e);
    const retryable = !(e instanceof WellError) || e.retryable;
    job.createFailures++;
    await journal.write(async ({ db, event }) => {
      await updateInstance(db, h.id, { state: 'failed', error: message }, o.now());
      await event(job, 'resource-failed', `resource ${h.provider} (instance ${h.id}) failed: ${message}`);
    });
    // The well may have made part of it: destroy by id, like after a crash.
    void this.holdings.destroy(h);
    if (!this.stillWants(job)) return;
    if (retryable && job.createFailures < MAX_CREATE_ATTEMPTS) {
      const retry = setTimeout(
        () => {
          if (this.stillWants(job)) {
            this.advance(job);
            this.core.wake();
          }
        },
        500 * 2 ** job.createFailures,
      );
      retry.unref();
      return;
    }
    await this.outcomes().failAdmitted(job, `cannot create resource ${h.provider}: ${message}`);
  }

  private async createWorker(factory: Factory, job: TrackedJob, aheadOf?: TrackedJob): Promise<void> {
    const { o, journal, jobs } = this.core;
    const now = o.now();
    const attempt = job.attempts;
    // An in-process agent calls the controller directly: no token to make, none to leak. An
    // agent that registers gets the job's token when it does (service/cluster/agent-registration.ts).
    const token = factory.inProcess || factory.registers ? null : newToken('job');
    const registration = factory.registers ? newToken('agent') : undefined;
    if (token || registration) job.mayHoldToken = true;
    const record = await this.holdings.record(job, 'worker', factory.name, async ({ db, event }) => {
      const id = await insertWorker(
        db,
        {
          jobId: job.id,
          factory: factory.name,
          target: job.target,
          ...(registration ? { registration: hashToken(registration), members: job.workers } : {}),
        },
        now,
      );
      if (token) await insertJobToken(db, token, job.id, `job ${job.id}`, now);
      await updateJob(db, job.id, { reason: `starting on worker ${id} (factory ${factory.name})` });
      const gang = job.workers > 1 ? ` for ${job.workers} ranks` : '';
      // Handed a worker ahead of a job that waits for more (backfill at the pool): said so.
      const ahead = aheadOf
        ? `, ahead of job ${aheadOf.id}, which waits for ${aheadOf.workers > 1 ? `${aheadOf.workers} workers` : 'devices'}`
        : '';
      await event(
        job,
        'worker-creating',
        `worker ${id} requested from factory ${factory.name}${gang}${ahead}`,
      );
      return id;
    });
    const workerId = record.id;
    if (!this.stillWants(job, attempt)) {
      // Cancelled or evicted meanwhile: its token (maybe written after the end revoked tokens)
      // must not outlive the job.
      if (token) await journal.write(({ db }) => deleteJobTokens(db, job.id));
      return this.holdings.destroy(record);
    }
    jobs.assignWorker(job, workerId);
    /** Whether the factory made it: undefined before it was asked. */
    let created: boolean | undefined;
    try {
      // The project's login to its image's registry, in the clear for this pull only.
      const imageLogin =
        job.image !== undefined
          ? await o.images?.login(job.project, parseImageReference(job.image).registry)
          : undefined;
      const began = performance.now();
      created = false;
      record.handle = await factory.create({
        workerId,
        jobId: job.id,
        project: job.project,
        target: job.target,
        url: o.serverUrl(),
        token,
        ...(registration ? { registration } : {}),
        requests: workerRequests(job),
        members: job.workers,
        ...(job.image !== undefined ? { image: job.image } : {}),
        ...(imageLogin ? { imageLogin } : {}),
      });
      created = true;
      o.metrics?.created('worker', factory.name, (performance.now() - began) / 1000);
      const devices = record.handle.devices;
      await journal.write(async ({ db, event }) => {
        await updateWorker(db, workerId, { state: 'ready', handle: record.handle }, o.now());
        // Which devices it was given: on its timeline, as Slurm's job record keeps its GRES.
        if (Array.isArray(devices) && devices.length > 0)
          await event(job, 'devices-assigned', `worker ${workerId} holds ${devicesText(devices)}`);
      });
    } catch (e) {
      // The factory's failure (not a login's before it, nor a record's after it).
      if (created === false) o.metrics?.created('worker', factory.name, null);
      const message = e instanceof Error ? e.message : String(e);
      await journal.write(({ db }) =>
        updateWorker(db, workerId, { state: 'failed', error: message }, o.now()),
      );
      await this.outcomes().endRun(
        job,
        {
          outcome: 'start-failed',
          exitCode: null,
          signal: null,
          message: `cannot create worker: ${message}`,
        },
        'infrastructure',
      );
    }
  }
}
