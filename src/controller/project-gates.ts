/**
 * What a project must still hold for its queued jobs to be admitted, and where they queue.
 *
 * Privileges are checked at submission, and again here before admission: a privilege revoked
 * from a project parks its queued jobs that need it (out of the scheduler, so they never hold a
 * queue's head or its quota) with a reason that names it, until it is granted again. Jobs
 * already admitted or running keep going, as in Kueue, where admission checks gate admission
 * only. A project moved to another cluster queue takes its queued jobs along; admitted and
 * running ones finish where they are.
 */
import type { Blocker } from '../domain/blocker.js';
import type { ProjectAccess } from '../domain/project.js';
import { updateJob } from '../store/queries/jobs.js';
import type { ControllerCore } from './core.js';
import { workloadOf } from './tracked-jobs.js';
import type { TrackedJob } from './model.js';

export class ProjectGates {
  private readonly privileges = new Map<string, Set<string>>();

  constructor(private readonly core: ControllerCore) {}

  /** Every project's privileges, as the rebuild on start reads them. */
  load(all: Iterable<{ project: string; privilege: string }>): void {
    this.privileges.clear();
    for (const { project, privilege } of all) this.held(project).add(privilege);
  }

  private held(project: string): Set<string> {
    let set = this.privileges.get(project);
    if (!set) this.privileges.set(project, (set = new Set()));
    return set;
  }

  /** The privileges the job's target and resources need (from the config), sorted. */
  private required(job: TrackedJob): string[] {
    const { targets, resources = {} } = this.core.o;
    const out = new Set<string>();
    const target = targets[job.target]?.privilege;
    if (target) out.add(target);
    for (const r of job.resources) {
      const p = resources[r]?.privilege;
      if (p) out.add(p);
    }
    return [...out].sort();
  }

  /** The first privilege the job needs that its project does not hold. */
  missing(job: TrackedJob): string | undefined {
    const held = this.privileges.get(job.project);
    return this.required(job).find((p) => !held?.has(p));
  }

  /** Why a parked job waits, for people. */
  static reason(job: TrackedJob, privilege: string): string {
    return `waiting for privilege ${privilege}, which project ${job.project} no longer holds (an admin can grant it again)`;
  }

  static blocker(job: TrackedJob, privilege: string): Blocker {
    return { kind: 'privilege', project: job.project, privilege };
  }

  /** Takes a queued job out of the scheduler until its project holds `privilege` again. */
  async park(job: TrackedJob, privilege: string): Promise<void> {
    const { jobs, journal, o } = this.core;
    if (o.scheduler.withdraw(job.id)) jobs.inScheduler--;
    job.parkedFor = privilege;
    const reason = ProjectGates.reason(job, privilege);
    await journal.write(({ db }) => updateJob(db, job.id, { reason }));
    journal.announce(job, reason);
  }

  /**
   * Projects now use these cluster queues and hold these privileges: their queued jobs follow
   * them to their queues, and are parked or let go. One walk over the tracked jobs, however many
   * projects changed (a leader catching up passes them all).
   */
  async sync(projects: ProjectAccess[]): Promise<void> {
    const byName = new Map(projects.map((p) => [p.name, p]));
    for (const p of projects) this.privileges.set(p.name, new Set(p.privileges));
    for (const job of this.core.jobs.allQueued()) {
      const p = byName.get(job.project);
      if (p && job.ending === null) await this.settle(job, p.clusterQueue);
    }
    this.core.wake();
  }

  private async settle(job: TrackedJob, queue: string): Promise<void> {
    const { o } = this.core;
    if (job.queue !== queue) {
      const inScheduler = o.scheduler.withdraw(job.id);
      this.core.jobs.moveQueue(job, queue);
      if (inScheduler) o.scheduler.enqueue(workloadOf(job, this.core.runtimes));
    }
    // Not yet up for admission (its dependencies, its retry's backoff): checked when it is.
    if (job.waitingFor.length > 0 || job.retryAt !== null) return;
    const lacking = this.missing(job);
    if (lacking && job.parkedFor !== lacking) await this.park(job, lacking);
    else if (!lacking && job.parkedFor !== null) this.release(job);
  }

  /** A parked job goes back to the scheduler, at the place its priority and age give it. */
  private release(job: TrackedJob): void {
    job.parkedFor = null;
    this.core.jobs.inScheduler++;
    this.core.o.scheduler.enqueue(workloadOf(job, this.core.runtimes));
  }

  /** The project was deleted: its privileges go, and its jobs are now filed under `archivedAs`. */
  archive(project: string, archivedAs: string, ids: Iterable<number>): void {
    this.privileges.delete(project);
    for (const id of ids) {
      const job = this.core.jobs.get(id);
      if (job && job.project === project) this.core.jobs.moveProject(job, archivedAs);
    }
  }
}
