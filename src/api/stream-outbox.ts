/**
 * What waits to go out on one live stream. A job notice is only a signal to refresh, so notices
 * are coalesced: one per job (its newest), and past `maxJobs` jobs one per project; figures are
 * snapshots, so only the latest is kept. However slow a client's socket, what it holds is
 * bounded by the jobs (then projects) it may see, never by how much happened. Pure: no I/O.
 */
import type { JobState } from '../domain/job.js';

export interface JobNotice {
  id: number;
  project: string;
  state: JobState;
  reason: string;
}

export const MAX_PENDING_JOBS = 1000;

export class StreamOutbox {
  private jobs = new Map<number | string, JobNotice>();
  private perProject = false;
  private figures: string | undefined;

  constructor(private readonly maxJobs = MAX_PENDING_JOBS) {}

  get empty(): boolean {
    return this.jobs.size === 0 && this.figures === undefined;
  }

  addJob(n: JobNotice): void {
    const key = this.perProject ? n.project : n.id;
    this.jobs.delete(key); // re-inserted last: notices go out in the order of their last change
    this.jobs.set(key, n);
    if (!this.perProject && this.jobs.size > this.maxJobs) {
      const newest = new Map<string, JobNotice>();
      for (const j of this.jobs.values()) {
        newest.delete(j.project);
        newest.set(j.project, j);
      }
      this.jobs = newest;
      this.perProject = true;
    }
  }

  /** The latest figures, as the JSON line to send. */
  setFigures(json: string): void {
    this.figures = json;
  }

  /** Everything waiting, emptied. */
  take(): { figures: string | undefined; jobs: JobNotice[] } {
    const out = { figures: this.figures, jobs: [...this.jobs.values()] };
    this.jobs = new Map();
    this.perProject = false;
    this.figures = undefined;
    return out;
  }
}
