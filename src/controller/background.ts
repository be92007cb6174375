/**
 * The controller's work that nobody awaits: a worker or resource being made, a run's end, a
 * pilot's hand-over, a destruction, a pass of the loop. Each starts from an event (a pass, an
 * agent's report, a timer) and ends with its writes to the store. Kept here so that stopping can
 * wait for them: the server closes its store right after the controller stops, and work still
 * under way then failed at its next write ("driver has already been destroyed") and left its row
 * as it was — a resource recorded `creating` whose creation had in fact finished.
 */
export class BackgroundWork {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly report: (err: unknown, what: string) => void) {}

  /** Work under way now. */
  get size(): number {
    return this.pending.size;
  }

  /** Runs `work` in the background: a failure is reported as `what`'s. */
  run(work: Promise<unknown>, what: string): void {
    this.track(work).catch((e: unknown) => this.report(e, what));
  }

  /** `work` itself, counted as under way until it settles; for work whose caller may await it. */
  track<T>(work: Promise<T>): Promise<T> {
    const settled: Promise<void> = work.then(
      () => {
        this.pending.delete(settled);
      },
      () => {
        this.pending.delete(settled);
      },
    );
    this.pending.add(settled);
    return work;
  }

  /**
   * Resolves once nothing is under way — work started meanwhile included — or after `ms`:
   * whether everything settled in time. Work past the bound goes on; a stop does not wait for a
   * creation that hangs.
   */
  async settled(ms: number): Promise<boolean> {
    const deadline = performance.now() + ms;
    while (this.pending.size > 0) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, left, 'late')));
      const first = await Promise.race([Promise.all(this.pending), late]);
      clearTimeout(timer);
      if (first === 'late') return false;
    }
    return true;
  }
}
