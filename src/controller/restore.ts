/**
 * The rebuild on start: the model is made again from the store, and whatever a previous run of
 * the server left is reconciled.
 *
 * Every worker and instance not confirmed destroyed belongs to a previous run. Its agent died
 * with that server, so all are destroyed: an instance whose creation was never confirmed is
 * destroyed by its id (its well may have made it). Jobs that had started cannot be resumed (and
 * must not run twice): they fail. Jobs admitted but not started keep their quota and acquire
 * their resources and worker again. Queued jobs simply carry on.
 */
import { isTerminal, type JobRecord } from '../domain/job.js';
import { listClusterQueues } from '../store/queries/cluster-queues.js';
import { loadActiveJobs, updateJob } from '../store/queries/jobs.js';
import { listAllPrivileges } from '../store/queries/projects.js';
import { loadLiveInstances } from '../store/queries/resource-instances.js';
import { loadLiveWorkers } from '../store/queries/workers.js';
import type { ControllerCore } from './core.js';
import { newHolding, type Holding, type Holdings } from './holdings.js';
import type { Lifecycle } from './lifecycle.js';
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
  ) {}

  /** Rebuilds the model; returns what the previous run left, to be destroyed once it is done. */
  async run(): Promise<Holding[]> {
    const db = this.core.o.store.db;
    for (const q of await listClusterQueues(db)) this.queues.upsert(toQueueModel(q));
    this.gates.load(await listAllPrivileges(db));
    const leftovers: Holding[] = [];
    for (const w of await loadLiveWorkers(db)) {
      const h = newHolding('worker', w.id, w.jobId, w.factory);
      h.handle = w.handle;
      leftovers.push(h);
    }
    for (const r of await loadLiveInstances(db)) {
      const h = newHolding('instance', r.id, r.jobId, r.type);
      h.metadata = r.state === 'creating' ? null : r.metadata;
      leftovers.push(h);
    }
    for (const h of leftovers) {
      this.holdings.attach(h, undefined);
      const pool = this.core.pools.of(h);
      if (pool) pool.inUse++;
    }
    const heldBy = new Map<number, Holding[]>();
    for (const h of leftovers) heldBy.set(h.jobId, [...(heldBy.get(h.jobId) ?? []), h]);
    for (const job of await loadActiveJobs(db)) await this.restoreJob(job, heldBy.get(job.id) ?? []);
    return leftovers;
  }

  /** Rebuilds one job; `held` are the leftovers of the previous run it held (being destroyed). */
  private async restoreJob(r: JobRecord, held: Holding[]): Promise<void> {
    const { jobs, journal, o } = this.core;
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
        await this.lifecycle.finish(
          job,
          'failed',
          'worker lost: the server restarted while the job ran',
          null,
        );
        return;
      case 'admitted':
        o.scheduler.restoreAdmitted({
          ...workloadOf(job),
          admittedAt: job.admittedAt ?? o.now(),
          borrowed: job.borrowed ?? {},
        });
        this.provisioning.advance(job);
        return;
      case 'queued':
        await this.lifecycle.enqueueWhenReady(job);
        return;
      default:
        jobs.markFinished(job); // finished, its cleanup not yet confirmed
    }
  }
}
