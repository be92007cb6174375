/**
 * A provider with a capacity: a factory's workers or a well's resource instances. Its waiters
 * are served by priority, then first come first served; a unit counts as in use from the moment
 * it is handed out until its destruction is confirmed.
 *
 * A gang job takes all its workers from a factory in one step, or none: while they do not fit,
 * it waits at the head of the line and nobody behind overtakes it (so a gang is never starved by
 * a stream of small jobs), and it holds nothing of this pool while it waits.
 */
import type { PoolFigures } from '../domain/pool-figures.js';
import type { Holding } from './holdings.js';
import { Waitlist, type Waiter } from './waitlist.js';

export type PoolKind = 'factory' | 'resource';

export const poolKey = (kind: PoolKind, name: string): string => `${kind}:${name}`;

export class Pool<T extends Waiter> {
  readonly waitlist = new Waitlist<T>();
  inUse = 0;

  constructor(
    readonly kind: PoolKind,
    readonly name: string,
    readonly capacity: number,
  ) {}

  get key(): string {
    return poolKey(this.kind, this.name);
  }

  /** Units the waiter takes: a gang's workers from a factory, else one. */
  unitsOf(w: T): number {
    return this.kind === 'factory' ? (w.workers ?? 1) : 1;
  }

  /** The next waiter, its units now counted as in use; undefined when it does not fit or nobody waits. */
  take(): T | undefined {
    const next = this.waitlist.peek();
    if (!next) return undefined;
    const units = this.unitsOf(next);
    if (this.inUse + units > this.capacity) return undefined;
    this.inUse += units;
    return this.waitlist.shift();
  }

  free(units = 1): void {
    this.inUse = Math.max(0, this.inUse - units);
  }

  /** "waiting for resource licence: 2/2 in use; position 1", "waiting for 4 workers at once from factory f: …" */
  describeWait(id: number): string {
    const waiter = this.waitlist.find((w) => w.id === id);
    const units = waiter ? this.unitsOf(waiter) : 1;
    const what =
      this.kind === 'resource'
        ? `resource ${this.name}`
        : units > 1
          ? `${units} workers at once from factory ${this.name}`
          : `a worker from factory ${this.name}`;
    return `waiting for ${what}: ${this.inUse}/${this.capacity} in use; position ${this.waitlist.position(id)}`;
  }
}

/** Every factory's and well's pool, by key. */
export class Pools<T extends Waiter> {
  private readonly byKey = new Map<string, Pool<T>>();
  /** The kind of provider behind each pool (`local`, `postgres`, …), for the figures. */
  private readonly kinds = new Map<string, string>();

  add(pool: Pool<T>, providerKind: string): void {
    this.byKey.set(pool.key, pool);
    this.kinds.set(pool.key, providerKind);
  }

  get(kind: PoolKind, name: string): Pool<T> | undefined {
    return this.byKey.get(poolKey(kind, name));
  }

  /** The pool a worker or instance counts against. */
  of(h: Holding): Pool<T> | undefined {
    return this.get(h.kind === 'worker' ? 'factory' : 'resource', h.provider);
  }

  all(): Iterable<Pool<T>> {
    return this.byKey.values();
  }

  figures(kind: PoolKind): PoolFigures[] {
    return [...this.byKey.values()]
      .filter((p) => p.kind === kind)
      .map((p) => ({
        name: p.name,
        kind: this.kinds.get(p.key) ?? '',
        capacity: p.capacity,
        inUse: p.inUse,
        waiting: p.waitlist.size,
      }));
  }
}
