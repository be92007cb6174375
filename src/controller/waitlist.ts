/**
 * Waiters for one factory (or, later, one well): served by priority, then first come first
 * served. Waiters are admitted jobs, so there are few (bounded by quota): a sorted array is
 * simpler and faster here than a heap.
 */
export interface Waiter {
  id: number;
  priority: number;
  createdAt: number;
  /** Workers it takes from a factory at once (a gang job's; 1 when absent). */
  workers?: number;
  /** What it requests in all (a factory with devices gives it that many of each kind it has). */
  requests?: Record<string, number>;
  /** Its timeout: whether it may run ahead of a waiting gang (pool.ts); null or absent: none. */
  timeoutSeconds?: number | null;
}

const before = (a: Waiter, b: Waiter): boolean =>
  a.priority !== b.priority
    ? a.priority > b.priority
    : a.createdAt !== b.createdAt
      ? a.createdAt < b.createdAt
      : a.id < b.id;

export class Waitlist<T extends Waiter> {
  private items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  add(w: T): void {
    let lo = 0;
    let hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (before(this.items[mid]!, w)) lo = mid + 1;
      else hi = mid;
    }
    this.items.splice(lo, 0, w);
  }

  peek(): T | undefined {
    return this.items[0];
  }

  shift(): T | undefined {
    return this.items.shift();
  }

  /** The first waiter, in serving order, that `match` accepts. */
  find(match: (w: T) => boolean): T | undefined {
    return this.items.find(match);
  }

  remove(id: number): boolean {
    const i = this.items.findIndex((w) => w.id === id);
    if (i < 0) return false;
    this.items.splice(i, 1);
    return true;
  }

  /** The waiters, in serving order. */
  values(): Iterable<T> {
    return this.items;
  }

  /** 1-based position of `id`, or 0. */
  position(id: number): number {
    return this.items.findIndex((w) => w.id === id) + 1;
  }
}
