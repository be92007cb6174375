/** At most `max` of some work at once; the rest waits its turn, first come first served. */
export class ConcurrencyLimit {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  /** Runs `fn` once fewer than `max` others run. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    // A freed slot passes straight to the first in line (running is not decremented), so that a
    // newcomer cannot take it first.
    if (this.running < this.max) this.running++;
    else await new Promise<void>((r) => this.waiting.push(r));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
