/**
 * Per-project series, behind `metrics.perProject` (off by default): each project's queued, admitted
 * and running jobs, and its jobs' admission wait — what a chargeback or a tenant's SLO is written
 * over. A project label grows with the tenants, so the families exist only when the switch is on:
 * 23 series per project that had a job since the server started (3 gauges, at 0 once it has none
 * unfinished, so that a rate or a panel never loses it; the histogram's 17 buckets, +Inf, sum and
 * count once one of its jobs was admitted).
 */
import { Histogram, type Registry } from 'prom-client';
import { collectedGauge } from './collected-gauge.js';
import type { ModelFigures } from './model-metrics.js';
import { WAIT_BUCKETS } from './queue-metrics.js';

export class ProjectMetrics {
  private readonly admissionWait: Histogram<'project'>;
  /** Every project that had a job since the server started: its gauges stay, at 0 when idle. */
  private readonly seen = new Set<string>();

  constructor(registers: Registry[], model: () => ModelFigures | undefined) {
    this.admissionWait = new Histogram({
      name: 'berth_project_admission_wait_seconds',
      help: 'From a job being queued to its admission, per project (metrics.perProject)',
      labelNames: ['project'],
      buckets: WAIT_BUCKETS,
      registers,
    });
    const seen = this.seen;
    const perProject = (
      name: string,
      help: string,
      value: (p: { queued: number; admitted: number; running: number }) => number,
    ) =>
      collectedGauge(registers, name, help, ['project'], (set) => {
        const figures = model();
        if (figures === undefined) return; // a follower: the leader's series are the leader's
        for (const project of seen) set({ project }, 0);
        for (const p of figures.projects()) {
          seen.add(p.project);
          set({ project: p.project }, value(p));
        }
      });
    perProject(
      'berth_project_pending_jobs',
      'Queued jobs per project, held ones included (metrics.perProject)',
      (p) => p.queued,
    );
    perProject(
      'berth_project_admitted_jobs',
      'Jobs holding quota per project, running ones included (metrics.perProject)',
      (p) => p.admitted + p.running,
    );
    perProject(
      'berth_project_running_jobs',
      'Running jobs per project (metrics.perProject)',
      (p) => p.running,
    );
  }

  admitted(project: string, waitSeconds: number): void {
    this.seen.add(project);
    this.admissionWait.observe({ project }, Math.max(0, waitSeconds));
  }
}
