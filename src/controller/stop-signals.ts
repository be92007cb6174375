/**
 * Wakes the heartbeat long polls of a job's agent when the job must stop, so a cancel or an
 * eviction reaches the agent at once rather than at its next heartbeat.
 */
export class StopSignals {
  private readonly waiters = new Map<number, Set<() => void>>();

  /** Resolves after `ms`, or earlier when `notify(jobId)` is called or `abort` aborts. */
  wait(jobId: number, ms: number, abort?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (abort?.aborted) return resolve();
      let set = this.waiters.get(jobId);
      if (!set) this.waiters.set(jobId, (set = new Set()));
      const waiters = set;
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        abort?.removeEventListener('abort', done);
        // No empty set is kept: a pilot's worker id or a job id is asked about for a while, then
        // never again, and a long-lived server must not keep one entry per worker it ever had.
        if (waiters.size === 0 && this.waiters.get(jobId) === waiters) this.waiters.delete(jobId);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
      abort?.addEventListener('abort', done, { once: true });
    });
  }

  notify(jobId: number): void {
    for (const w of this.waiters.get(jobId) ?? []) w();
  }

  forget(jobId: number): void {
    this.waiters.delete(jobId);
  }

  /** Ends every wait (the server is stopping). */
  notifyAll(): void {
    for (const set of this.waiters.values()) for (const w of set) w();
  }
}
