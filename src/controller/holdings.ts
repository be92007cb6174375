/**
 * What jobs hold and must give back: workers and resource instances. Both follow the same life
 * cycle — recorded (`creating`), made, confirmed (`ready`), destroyed, confirmed (`destroyed`) —
 * so one path records them and one destroys them, retrying a failed destroy with backoff. A job
 * counts as cleaned up only once the last thing it held is confirmed destroyed.
 */
import type { Metadata } from '../domain/resource-instance.js';
import { updateJob } from '../store/queries/jobs.js';
import { updateInstance } from '../store/queries/resource-instances.js';
import { updateWorker } from '../store/queries/workers.js';
import type { Db } from '../store/store.js';
import type { ControllerCore } from './core.js';
import type { Unit } from './journal.js';
import { holdingKey, type Holding, type HoldingKind, type TrackedJob } from './model.js';
import { ownHoldings } from './tracked-jobs.js';

export function newHolding(
  kind: HoldingKind,
  id: number,
  jobId: number,
  provider: string,
  units = 1,
): Holding {
  return {
    kind,
    id,
    jobId,
    provider,
    handle: null,
    metadata: null,
    units,
    destroying: false,
    freed: false,
    destroyAttempts: 0,
    nextDestroyAt: 0,
  };
}

/** The longest wait between two attempts to destroy the same thing. */
const MAX_DESTROY_BACKOFF_MS = 60_000;

export class Holdings {
  private readonly all = new Map<string, Holding>();
  /** Holdings whose destruction failed, retried with backoff by `retryDue`. */
  private readonly retries = new Set<Holding>();

  constructor(private readonly core: ControllerCore) {}

  get(kind: HoldingKind, id: number): Holding | undefined {
    return this.all.get(holdingKey(kind, id));
  }

  /** Every worker and instance not yet confirmed destroyed (the metrics count them by state). */
  values(): Iterable<Holding> {
    return this.all.values();
  }

  /**
   * The units held of a pool, each with when it is expected free: its job's start plus its
   * timeout and grace (Infinity for a job without a timeout); now for one whose job has ended
   * (being destroyed, or an idle pilot the waiting job's pool retires).
   */
  *ends(kind: HoldingKind, provider: string): Iterable<{ units: number; at: number }> {
    const { o, jobs } = this.core;
    const now = o.now();
    for (const h of this.all.values()) {
      if (h.kind !== kind || h.provider !== provider || h.freed) continue;
      const job = jobs.unfinished(h.jobId);
      const at =
        !job || h.destroying
          ? now
          : job.timeoutSeconds === null
            ? Infinity
            : (job.startedAt ?? now) + (job.timeoutSeconds + o.graceSeconds) * 1000;
      yield { units: h.units, at };
    }
  }

  /** Attaches a holding (a new one, or one left over from before a restart) to its job. */
  attach(h: Holding, job: TrackedJob | undefined): void {
    this.all.set(holdingKey(h.kind, h.id), h);
    if (job) ownHoldings(job).add(holdingKey(h.kind, h.id));
  }

  /**
   * Records a worker or instance the job is about to get (`creating`) and attaches it to the job.
   * While the record is being written the job holds a placeholder, so that a job cancelled or
   * evicted in the meantime does not count as cleaned up, nor is forgotten, before its new
   * holding exists: the caller then destroys it through the one destruction path.
   */
  async record(
    job: TrackedJob,
    kind: HoldingKind,
    provider: string,
    insert: (u: Unit) => Promise<number>,
  ): Promise<Holding> {
    const placeholder = `acquiring:${kind}:${provider}`;
    ownHoldings(job).add(placeholder);
    let id: number;
    try {
      id = await this.core.journal.write(insert);
    } finally {
      job.holdings.delete(placeholder);
    }
    const h = newHolding(kind, id, job.id, provider, kind === 'worker' ? job.workers : 1);
    if (kind === 'worker') {
      const devices = this.core.pools.get('factory', provider)?.devicesOf(job);
      if (devices && Object.keys(devices).length > 0) h.devices = devices;
    }
    this.attach(h, job);
    return h;
  }

  /** Destroys everything the job holds (its resources and its worker). */
  releaseAll(job: TrackedJob): void {
    for (const key of job.holdings) {
      const h = this.all.get(key);
      if (h) void this.destroy(h);
    }
  }

  /**
   * Destroys a worker or an instance: recorded as destroying, destroyed by its factory or well,
   * then confirmed. A failure is retried with backoff; until then the record stays visible as
   * destroying and its capacity stays taken. A stop waits for it (background.ts).
   */
  destroy(h: Holding): Promise<void> {
    return this.core.background.track(this.destroyNow(h));
  }

  private async destroyNow(h: Holding): Promise<void> {
    if (h.destroying) return;
    h.destroying = true;
    const { o, jobs, journal } = this.core;
    const key = holdingKey(h.kind, h.id);
    const mark = (db: Db, state: 'destroying' | 'destroyed') =>
      h.kind === 'worker'
        ? updateWorker(db, h.id, { state }, o.now())
        : updateInstance(db, h.id, { state }, o.now());
    try {
      // The mark and the destruction go side by side: a crash before the mark is written leaves
      // a worker or instance of a job that no longer wants it, which a restart destroys just the
      // same (restore.ts). Only the confirmation below must wait for the destruction.
      // Its capacity is free once its provider says it takes none (or has destroyed it), not
      // once that is written: a crash before the write destroys it again, which finds nothing.
      const free = () => {
        if (h.freed) return;
        h.freed = true;
        this.core.pools.of(h)?.free(h.units, h.devices);
        this.core.wake();
      };
      const settled = await Promise.allSettled([
        journal.write(({ db }) => mark(db, 'destroying')),
        this.destroyByProvider(h, free),
      ]);
      for (const r of settled) if (r.status === 'rejected') throw r.reason;
      free();
      const job = jobs.get(h.jobId);
      job?.holdings.delete(key);
      const cleaned = !job || this.cleanable(job);
      if (job && cleaned) job.cleaning = true;
      await journal.write(async ({ db }) => {
        await mark(db, 'destroyed');
        if (cleaned) await updateJob(db, h.jobId, { cleanedUp: true });
      });
      this.all.delete(key);
      this.retries.delete(h);
      if (job && cleaned) {
        journal.announce(job, 'cleaned up');
        this.forget(job);
      } else if (job) {
        // The job may have finished, or its last other holding gone, while this was written.
        await this.settleCleanup(job);
      }
      this.core.wake();
    } catch (e) {
      h.destroying = false;
      h.destroyAttempts++;
      h.nextDestroyAt = o.now() + Math.min(MAX_DESTROY_BACKOFF_MS, 1000 * 2 ** h.destroyAttempts);
      this.retries.add(h);
      this.core.report(e, `destroy ${key}`);
    }
  }

  private async destroyByProvider(h: Holding, stopped: () => void): Promise<void> {
    const { o, jobs } = this.core;
    if (h.kind === 'worker') return o.factories.get(h.provider)?.destroy(h.id, h.handle, stopped);
    const project = jobs.get(h.jobId)?.project ?? '';
    const req = { instanceId: h.id, jobId: h.jobId, project, type: h.provider };
    await o.wells.get(h.provider)?.destroy(req, h.metadata);
  }

  /** A finished job that holds nothing and whose cleanup nobody records yet. */
  private cleanable(job: TrackedJob): boolean {
    return this.core.jobs.isFinished(job.id) && job.holdings.size === 0 && !job.cleaning;
  }

  /**
   * Records the cleanup of a finished job whose last holding is gone. Called after every write
   * that may have let a job finish or drop its last holding, so that whichever of the two comes
   * last, one of them sees both and the cleanup is recorded exactly once.
   */
  async settleCleanup(job: TrackedJob): Promise<void> {
    if (!this.cleanable(job)) return;
    job.cleaning = true;
    await this.core.journal.write(({ db }) => updateJob(db, job.id, { cleanedUp: true }));
    this.core.journal.announce(job, 'cleaned up');
    this.forget(job);
  }

  /** The job is cleaned up: nothing about it needs to stay in memory. */
  forget(job: TrackedJob): void {
    this.core.jobs.forget(job.id);
    this.core.signals.forget(job.id);
  }

  /** Tries again every failed destroy whose backoff has passed. */
  retryDue(now: number): void {
    for (const h of this.retries) if (!h.destroying && now >= h.nextDestroyAt) void this.destroy(h);
  }

  /** The metadata of the instances the job holds, by resource type: for that job only. */
  metadataOf(job: TrackedJob | undefined): Record<string, Metadata> {
    const out: Record<string, Metadata> = {};
    for (const key of job?.holdings ?? []) {
      const h = this.all.get(key);
      if (h?.kind === 'instance' && h.metadata && !h.destroying) out[h.provider] = h.metadata;
    }
    return out;
  }
}
