/**
 * A provider with a capacity: a factory's workers or a well's resource instances. Its waiters
 * are served by priority, then first come first served; a unit counts as in use from the moment
 * it is handed out until its destruction is confirmed.
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

  /** The next waiter, now counted as in use; undefined when full or when nobody waits. */
  take(): T | undefined {
    if (this.inUse >= this.capacity || this.waitlist.size === 0) return undefined;
    this.inUse++;
    return this.waitlist.shift();
  }

  free(): void {
    this.inUse = Math.max(0, this.inUse - 1);
  }

  /** "waiting for resource licence: 2/2 in use; position 1" */
  describeWait(id: number): string {
    const what = this.kind === 'factory' ? `a worker from factory ${this.name}` : `resource ${this.name}`;
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
