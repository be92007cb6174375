/**
 * How many rows a housekeeping batch (the retention sweep's) takes, sized by time rather than
 * by count: each batch is one transaction, and on SQLite a transaction holds the only connection,
 * so every submission that arrives meanwhile waits for it. A count that is quick on an idle
 * machine holds the store for tens of milliseconds on a busy one (200 jobs: 26 ms measured on
 * the bench machine under load), which is what a submission's p99 then shows. After each batch
 * the size is scaled towards `targetMs` — at most doubled or halved at a time, within bounds.
 */
export class BatchSize {
  private current: number;
  private last = 0;

  constructor(
    private readonly o: { first: number; min: number; max: number; targetMs: number },
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.current = o.first;
  }

  /** The size of the next batch. */
  get size(): number {
    return this.current;
  }

  /** How long the last batch took, ms (0 before the first). */
  get lastMs(): number {
    return this.last;
  }

  /** Runs one batch of `size` rows, and sizes the next one by how long it took. */
  async run<T>(batch: (size: number) => Promise<T>): Promise<T> {
    const t0 = this.clock();
    const out = await batch(this.current);
    const ms = this.clock() - t0;
    this.last = ms;
    const factor = Math.min(2, Math.max(0.5, this.o.targetMs / Math.max(ms, 0.01)));
    this.current = Math.round(Math.min(this.o.max, Math.max(this.o.min, this.current * factor)));
    return out;
  }
}
