/**
 * What the queues are expected to receive: a forecast from the present alone misses the work
 * submitted after a job, which overtakes it when its priority is higher (or its project's share
 * lower). The recent past stands in for the near future: the arrivals of the last window are taken
 * to repeat, window after window. Bounded: at most `max` arrivals are kept.
 */
export interface Arrived<T> {
  at: number;
  item: T;
}

export class RecentArrivals<T> {
  private items: Arrived<T>[] = [];
  private head = 0;
  /** The latest arrival dropped to stay within `max` (the window then covers less). */
  private cutAt = -Infinity;
  /** The first arrival seen: until a window has passed since, the window is only that long. */
  private firstAt: number | null = null;

  constructor(
    readonly windowMs = 60_000,
    private readonly max = 10_000,
  ) {}

  add(at: number, item: T): void {
    this.firstAt ??= at;
    this.items.push({ at, item });
    this.trim(at);
  }

  /**
   * The arrivals of the last window that `keep` selects, repeated after `now` up to `horizonMs`,
   * at most `max` of them. The window is the span the kept arrivals cover (shorter than
   * `windowMs` when more than `max` arrived in it).
   */
  project(
    now: number,
    horizonMs: number,
    max: number,
    keep: (item: T) => boolean = () => true,
  ): Arrived<T>[] {
    this.trim(now);
    const kept = this.items.slice(this.head);
    const out: Arrived<T>[] = [];
    if (kept.length === 0) return out;
    const cut = this.cutAt >= now - this.windowMs;
    const span = Math.max(1, cut ? now - kept[0]!.at : Math.min(this.windowMs, now - (this.firstAt ?? now)));
    const recent = kept.filter((a) => keep(a.item));
    if (recent.length === 0) return out;
    for (let k = 1; out.length < max; k++) {
      const shift = k * span;
      if (recent[0]!.at + shift > now + horizonMs) break;
      for (const a of recent) {
        if (out.length >= max || a.at + shift > now + horizonMs) break;
        if (a.at + shift > now) out.push({ at: a.at + shift, item: a.item });
      }
    }
    return out;
  }

  private trim(now: number): void {
    const from = now - this.windowMs;
    for (; this.head < this.items.length; this.head++) {
      const first = this.items[this.head]!;
      if (first.at >= from && this.items.length - this.head <= this.max) break;
      if (first.at >= from) this.cutAt = Math.max(this.cutAt, first.at);
    }
    // Compact now and then, so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
