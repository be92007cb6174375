/**
 * Arrays' throttles (`--array 0-999%50`): at most K tasks of such an array are in play — handed
 * to the scheduler, admitted or running, also while requeued or waiting out a retry — at once.
 * The others wait here, outside the scheduler, in index order, and each task that finishes lets
 * the next one go on. So a throttled array of 100,000 tasks puts only K into the scheduler.
 */
import type { TrackedJob } from './model.js';

interface Throttle {
  inPlay: Set<number>;
  /** Tasks waiting for their turn, first to last; `next` is the first not yet let go. */
  waiting: TrackedJob[];
  next: number;
}

export class ArrayThrottles {
  private readonly arrays = new Map<number, Throttle>();

  private of(arrayId: number): Throttle {
    let t = this.arrays.get(arrayId);
    if (!t) this.arrays.set(arrayId, (t = { inPlay: new Set(), waiting: [], next: 0 }));
    return t;
  }

  /** A task already in play (admitted or running when the server restarted) holds its place. */
  occupy(arrayId: number, jobId: number): void {
    this.of(arrayId).inPlay.add(jobId);
  }

  /** Whether the task may go on now; if not, it waits here for its turn (`job.throttled`). */
  admit(job: TrackedJob): boolean {
    if (job.arrayId === null || job.arrayThrottle === null) return true;
    const t = this.of(job.arrayId);
    if (t.inPlay.has(job.id)) return true;
    if (t.inPlay.size < job.arrayThrottle) {
      t.inPlay.add(job.id);
      return true;
    }
    job.throttled = true;
    t.waiting.push(job);
    return false;
  }

  /**
   * The task has finished: its place goes to the first waiting task that has not finished
   * meanwhile (a cancelled waiting task is skipped here), returned to be let go.
   */
  release(job: TrackedJob): TrackedJob | undefined {
    if (job.arrayId === null) return undefined;
    const t = this.arrays.get(job.arrayId);
    if (!t || !t.inPlay.delete(job.id)) return undefined;
    while (t.next < t.waiting.length) {
      const candidate = t.waiting[t.next++]!;
      if (candidate.ending !== null || !candidate.throttled) continue;
      candidate.throttled = false;
      t.inPlay.add(candidate.id);
      this.compact(t);
      return candidate;
    }
    if (t.inPlay.size === 0) this.arrays.delete(job.arrayId);
    return undefined;
  }

  /** How many of the array's tasks are in play (for its waiting tasks' reason). */
  inPlay(arrayId: number): number {
    return this.arrays.get(arrayId)?.inPlay.size ?? 0;
  }

  /** Drops the let-go head of the waiting list now and then, so it does not grow without bound. */
  private compact(t: Throttle): void {
    if (t.next > 1024 && t.next * 2 > t.waiting.length) {
      t.waiting = t.waiting.slice(t.next);
      t.next = 0;
    }
  }
}
