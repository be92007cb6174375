/**
 * The reconcile loop: level-triggered passes, woken by events (a submission, an agent report, a
 * freed unit) and coalesced to one per turn of the event loop. A pass asks the scheduler for its
 * decisions, records and carries them out, then lets every pool hand out what it has free.
 */
import { formatAmounts } from '../domain/quantity.js';
import type { Decision } from '../scheduler/types.js';
import { updateJob } from '../store/queries/jobs.js';
import type { ControllerCore } from './core.js';
import type { Lifecycle } from './lifecycle.js';
import type { Provisioning } from './provisioning.js';
import type { TrackedJob } from './model.js';

type Admission = Extract<Decision, { kind: 'admit' }>;

export class ReconcileLoop {
  private wakeScheduled = false;
  private ticking = false;
  private tickAgain = false;
  private stopped = false;

  constructor(
    private readonly core: ControllerCore,
    private readonly lifecycle: Lifecycle,
    private readonly provisioning: Provisioning,
  ) {}

  stop(): void {
    this.stopped = true;
  }

  wake(): void {
    if (this.wakeScheduled || this.stopped || this.core.journal.starting) return;
    this.wakeScheduled = true;
    setImmediate(() => {
      this.wakeScheduled = false;
      void this.core.background.track(this.tick());
    });
  }

  private async tick(): Promise<void> {
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    this.ticking = true;
    try {
      // Whatever asked for another pass while this one waited for its writes gets it at once,
      // before the event loop turns: e.g. the pass after a preemption victim is requeued admits
      // its preemptor before anyone can see the victim waiting behind it.
      do {
        this.tickAgain = false;
        await this.reconcile();
      } while (this.tickAgain && !this.stopped);
    } finally {
      this.ticking = false;
    }
  }

  /** One pass: scheduler decisions, carried out and recorded; then pools hand out what is free. */
  private async reconcile(): Promise<void> {
    const { o, jobs } = this.core;
    const t0 = performance.now();
    try {
      const hadWork = jobs.inScheduler > 0;
      const decisions = o.scheduler.schedule(o.now());
      if (hadWork) {
        const admitted = decisions.reduce((n, d) => (d.kind === 'admit' ? n + 1 : n), 0);
        o.metrics?.schedulerPass((performance.now() - t0) / 1000, o.scheduler.passDepth(), admitted);
      }
      if (decisions.length > 0) await this.apply(decisions);
      this.provisioning.dispatch();
    } catch (e) {
      this.core.report(e, 'reconcile');
    } finally {
      o.metrics?.tick((performance.now() - t0) / 1000);
    }
  }

  private async apply(decisions: Decision[]): Promise<void> {
    const { jobs, o } = this.core;
    const admits: { job: TrackedJob; d: Admission }[] = [];
    for (const d of decisions) {
      o.metrics?.decision(d.kind);
      if (d.kind !== 'admit') continue;
      if (d.backfilledAhead !== undefined) o.metrics?.jobBackfilled(d.queue);
      jobs.inScheduler--;
      const job = jobs.get(d.id);
      if (job) admits.push({ job, d });
    }
    if (admits.length > 0) await this.admit(admits);
    // Evictions at once, so that their records share commits.
    const evictions: Promise<void>[] = [];
    for (const d of decisions) {
      if (d.kind === 'preempt') {
        const by = jobs.get(d.preemptor)?.queue;
        for (const victimId of d.victims) {
          const victim = jobs.get(victimId);
          const reason = `preempted by job ${d.preemptor}: ${d.reason}`;
          if (!victim) continue;
          if (by !== undefined)
            o.metrics?.jobPreempted(by, victim.queue === by ? 'in_queue' : 'reclaim_in_cohort');
          evictions.push(this.lifecycle.evict(victim, 'preempt', reason));
        }
      } else if (d.kind === 'drain') {
        const job = jobs.get(d.id);
        if (job) evictions.push(this.lifecycle.evict(job, 'drain', d.reason));
      }
    }
    await Promise.all(evictions);
  }

  /**
   * The admissions of one pass are one unit: one commit however many there are. The admitted go
   * on to their resources and workers at once, not once it is written (nor once this pass's
   * victims have stopped: they fit in quota that is free already), so that the records of what
   * they are given share its commit — a job can start one commit sooner. Those records come after
   * the admission in the group commit's order, so a crash never leaves them without it.
   */
  private async admit(admits: { job: TrackedJob; d: Admission }[]): Promise<void> {
    const { jobs, journal, o } = this.core;
    const now = o.now();
    const written = journal.write(async ({ db, event }) => {
      for (const { job, d } of admits) {
        const borrowed = Object.keys(d.borrowed).length > 0 ? formatAmounts(d.borrowed) : null;
        await updateJob(db, job.id, { state: 'admitted', admittedAt: now, borrowed, reason: 'admitted' });
        const borrowText = borrowed
          ? ` borrowing ${Object.entries(borrowed)
              .map(([r, q]) => `${r} ${q}`)
              .join(', ')}`
          : '';
        const ahead = d.backfilledAhead === undefined ? '' : `, backfilled ahead of job ${d.backfilledAhead}`;
        const message = `admitted by cluster queue ${d.queue}${borrowText}${ahead}`;
        await event(job, 'admitted', message, borrowed ?? undefined);
      }
    });
    for (const { job, d } of admits) {
      jobs.setState(job, 'admitted');
      job.admittedAt = now;
      o.metrics?.jobAdmitted(job.queue, (now - job.queuedAt) / 1000, job.project);
      const estimated = jobs.estimated.get(job.id);
      if (estimated !== undefined) {
        jobs.estimated.delete(job.id);
        o.metrics?.startEstimated((now - estimated) / 1000);
      }
      job.borrowed = d.borrowed;
      this.provisioning.advance(job);
    }
    this.provisioning.dispatch();
    await written;
  }
}
