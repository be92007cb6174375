/**
 * A provider with a capacity: a factory's workers or a well's resource instances. Its waiters
 * are served by priority, then first come first served; a unit counts as in use from the moment
 * it is handed out until its destruction is confirmed.
 */
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
