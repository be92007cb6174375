/**
 * The rebuild on start: the model is made again from the store, and whatever a previous run of
 * the server left is reconciled.
 *
 * Every worker and instance not confirmed destroyed belongs to a previous run. A worker whose
 * factory can take it over (a Slurm job outlives the server: `Factory.adopt`) and whose job goes
 * on is adopted, with everything its job holds: the job carries on where it was, its agent
 * reconnecting within the heartbeat deadline. Everything else is destroyed, its agent having died
 * with that server: an instance whose creation was never confirmed is destroyed by its id (its
 * well may have made it). Jobs that had started elsewhere cannot be resumed (and must not run
 * twice): they fail. Jobs admitted but not started keep their quota and acquire their resources
 * and worker again. Queued jobs simply carry on.
 */
import { AGENT_RETRY_MAX_DELAY_MS } from '../agent/protocol.js';
import { isTerminal, type JobRecord } from '../domain/job.js';
import { heldDevices, type WorkerHandle, type WorkerRecord } from '../domain/worker.js';
import { listClusterQueues } from '../store/queries/cluster-queues.js';
import { activeJobPages, findJobs, loadJobsInPlay, updateJob } from '../store/queries/jobs.js';
import { listAllPrivileges } from '../store/queries/projects.js';
import { loadLiveInstances } from '../store/queries/resource-instances.js';
import { loadLiveWorkers, updateWorker } from '../store/queries/workers.js';
import type { ControllerCore } from './core.js';
import { newHolding, type Holdings } from './holdings.js';
import type { Holding, TrackedJob } from './model.js';
import type { Lifecycle } from './lifecycle.js';
import type { Pilots } from './pilots.js';
import type { ProjectGates } from './project-gates.js';
import type { Provisioning } from './provisioning.js';
import { toQueueModel, type QueueModels } from './queue-models.js';
import { workloadOf } from './tracked-jobs.js';

export class Restore {
  constructor(
    private readonly core: ControllerCore,
    private readonly queues: QueueModels,
    private readonly holdings: Holdings,
    private readonly lifecycle: Lifecycle,
    private readonly provisioning: Provisioning,
    private readonly gates: ProjectGates,
    private readonly pilots: Pilots,
  ) {}

  /** Rebuilds the model; returns what the previous run left, to be destroyed once it is done. */
  async run(): Promise<Holding[]> {
    const db = this.core.o.store.db;
    for (const q of await listClusterQueues(db)) this.queues.upsert(toQueueModel(q));
    this.gates.load(await listAllPrivileges(db));
    const workers = await loadLiveWorkers(db);
    // What the workers, the instances and the throttles need to know first: the jobs in play. The
    // queued ones (a million, perhaps: issue #18) are read afterwards, a page at a time.
    const inPlay = await loadJobsInPlay(db);
    const adopted = await this.adoptWorkers(workers, inPlay);
    const left: Holding[] = [];
    // A gang's worker takes one unit of its factory per member (its job may be queued again, the
    // worker still being destroyed).
    const gangSize = new Map(inPlay.map((j) => [j.id, j.spec.workers ?? 1]));
    const queuedWithWorker = [...new Set(workers.map((w) => w.jobId))].filter((id) => !gangSize.has(id));
    for (const j of queuedWithWorker.length > 0 ? await findJobs(db, queuedWithWorker) : [])
      gangSize.set(j.id, j.spec.workers ?? 1);
    for (const w of workers) {
      const h = newHolding('worker', w.id, w.jobId, w.factory, gangSize.get(w.jobId) ?? 1);
      h.handle = adopted.get(w.id) ?? w.handle;
      left.push(h);
    }
    for (const r of await loadLiveInstances(db)) {
      const h = newHolding('instance', r.id, r.jobId, r.type);
      h.metadata = r.state === 'creating' ? null : r.metadata;
      left.push(h);
    }
    for (const h of left) {
      this.holdings.attach(h, undefined);
      const pool = this.core.pools.of(h);
      if (pool) pool.inUse += h.units;
      // Devices its factory gave it (recorded in its handle) stay taken until it is destroyed.
      if (h.kind === 'worker' && pool) {
        h.devices = heldDevices(h.handle);
        pool.hold(h.devices);
      }
    }
    // Tasks of throttled arrays already in play hold their places before any queued one asks.
    for (const j of inPlay)
      if (j.arrayId !== null && j.spec.arrayThrottle && (j.state === 'admitted' || j.state === 'running'))
        this.core.throttles.occupy(j.arrayId, j.id);
    const heldBy = new Map<number, Holding[]>();
    for (const h of left) heldBy.set(h.jobId, [...(heldBy.get(h.jobId) ?? []), h]);
    // Every job, queued or in play, in the order of their ids as before; a page's records are
    // garbage once its jobs are tracked (only what the model keeps of them stays).
    for await (const page of activeJobPages(db)) {
      for (const job of page) {
        // Submitted while the rebuild went on (the API serves meanwhile) and taken up already.
        if (this.core.jobs.get(job.id)) continue;
        const held = heldBy.get(job.id) ?? [];
        const worker = held.find((h) => h.kind === 'worker' && adopted.has(h.id));
        if (worker) {
          await this.resume(job, held, worker);
          heldBy.delete(job.id); // kept, not destroyed
        } else await this.restoreJob(job, held);
      }
    }
    return [...heldBy.values()].flat();
  }

  /**
   * Offers each adopting factory the workers whose job goes on (admitted or running, not being
   * cancelled); returns those taken over with their handles. A factory that fails takes none.
   */
  private async adoptWorkers(
    workers: WorkerRecord[],
    inPlay: JobRecord[],
  ): Promise<Map<number, WorkerHandle>> {
    const goesOn = new Set(
      inPlay
        .filter((j) => (j.state === 'running' || j.state === 'admitted') && !j.cancelRequested)
        .map((j) => j.id),
    );
    const adopted = new Map<number, WorkerHandle>();
    await Promise.all(
      [...this.core.o.factories.values()].map(async (factory) => {
        if (!factory.adopt) return;
        const left = workers
          .filter((w) => w.factory === factory.name && w.state !== 'destroying' && goesOn.has(w.jobId))
          .map((w) => ({ workerId: w.id, handle: w.handle }));
        const offered = new Set(left.map((w) => w.workerId));
        try {
          for (const [id, handle] of await factory.adopt(left)) if (offered.has(id)) adopted.set(id, handle);
        } catch (e) {
          this.core.report(e, `adopt the workers of factory ${factory.name}`);
        }
      }),
    );
    return adopted;
  }

  /** A job whose worker was adopted carries on as it was, with everything it holds. */
  private async resume(r: JobRecord, held: Holding[], worker: Holding): Promise<void> {
    const { jobs, journal, o } = this.core;
    const job: TrackedJob = jobs.track(r);
    for (const h of held) this.holdings.attach(h, job);
    job.acquired = job.resources.length;
    // Its agent retries while the server is away: it has a heartbeat period, and the longest wait
    // between its tries, to come back.
    jobs.assignWorker(job, worker.id, o.now() + AGENT_RETRY_MAX_DELAY_MS);
    this.pilots.adopted(job);
    this.keepQuota(job);
    await journal.write(async ({ db, event }) => {
      await updateWorker(db, worker.id, { state: 'ready', handle: worker.handle }, o.now());
      await event(
        job,
        'worker-adopted',
        `worker ${worker.id} taken over after the server restarted${describeHandle(worker.handle)}`,
      );
    });
  }

  /** Rebuilds one job; `held` are the leftovers of the previous run it held (being destroyed). */
  private async restoreJob(r: JobRecord, held: Holding[]): Promise<void> {
    const { jobs, journal } = this.core;
    if (isTerminal(r.state) && held.length === 0) {
      await journal.write(({ db }) => updateJob(db, r.id, { cleanedUp: true }));
      return;
    }
    const job = jobs.track(r);
    // Attached before anything else, so the job counts as cleaned up only once they are gone.
    for (const h of held) this.holdings.attach(h, job);
    // Cancelling was requested (on some replica) but the job had not stopped: it ends now.
    if (r.cancelRequested && (r.state === 'queued' || r.state === 'admitted')) {
      await this.lifecycle.finish(
        job,
        'cancelled',
        'cancelled (requested before the scheduler restarted)',
        null,
      );
      return;
    }
    switch (r.state) {
      case 'running':
        // Its agent died with the previous server: the infrastructure's failure, retried if the
        // job asked for it.
        await this.lifecycle.fail(
          job,
          'worker lost: the server restarted while the job ran',
          null,
          'infrastructure',
        );
        return;
      case 'admitted':
        this.keepQuota(job);
        this.provisioning.advance(job);
        return;
      case 'queued':
        await this.lifecycle.enqueueWhenReady(job);
        return;
      default:
        jobs.markFinished(job); // finished, its cleanup not yet confirmed
    }
  }

  /** An admitted job keeps the quota it was admitted with. */
  private keepQuota(job: TrackedJob): void {
    const { o } = this.core;
    o.scheduler.restoreAdmitted({
      ...workloadOf(job, this.core.runtimes),
      admittedAt: job.admittedAt ?? o.now(),
      borrowed: job.borrowed ?? {},
    });
  }
}

/** " (Slurm job 123)" for a handle that names one. */
function describeHandle(handle: WorkerHandle | null): string {
  const id = handle?.slurmJobId;
  return typeof id === 'string' ? ` (Slurm job ${id})` : '';
}
