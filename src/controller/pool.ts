/**
 * A provider with a capacity: a factory's workers or a well's resource instances. Its waiters
 * are served by priority, then first come first served; a unit counts as in use from the moment
 * it is handed out until its destruction is confirmed.
 *
 * A gang job takes all its workers from a factory in one step, or none: while they do not fit,
 * it waits at the head of the line, holding nothing of this pool, and no job behind it may delay
 * its start (so a gang is never starved by a stream of small jobs). It holds a reservation: the
 * time enough units are expected free, from the ends the jobs holding them have by their timeouts
 * (`plan`). A job behind it is handed a free unit now only when it cannot delay that — it ends, by
 * its own timeout, before the reservation, or it fits in what the reservation leaves — as Slurm's
 * sched/backfill does for nodes. While a unit in use has no expected end, nobody overtakes.
 */
import type { PoolFigures } from '../domain/pool-figures.js';
import type { WaitingPlace } from './model.js';
import { Waitlist, type Waiter } from './waitlist.js';

export type PoolKind = 'factory' | 'resource';

export const poolKey = (kind: PoolKind, name: string): string => `${kind}:${name}`;

/** What a pool's reservations are planned from (the controller's model of who holds what). */
export interface PoolPlan {
  now(): number;
  /** How long after its timeout a job's unit may still be held (its grace), in ms. */
  graceMs: number;
  /** The units in use, each with when it is expected free (Infinity: not known). */
  ends(): Iterable<{ units: number; at: number }>;
}

export class Pool<T extends Waiter> implements WaitingPlace {
  readonly waitlist = new Waitlist<T>();
  inUse = 0;
  /** Set by the controller: a head that does not fit then holds a reservation (see above). */
  plan: PoolPlan | undefined;
  /** The waiting head the last one `take` handed out went ahead of (undefined: it was the head). */
  wentAheadOf: T | undefined;
  /** Of each device kind of a factory's machine (domain/devices.ts), how many are held. */
  readonly devicesInUse: Record<string, number> = {};

  constructor(
    readonly kind: PoolKind,
    readonly name: string,
    readonly capacity: number,
    /** A factory's devices, by kind: how many its machine has (none by default). */
    readonly devices: Record<string, number> = {},
  ) {}

  /**
   * The devices the waiter takes of each kind the factory has: each member's request of the kind
   * in whole devices, times its members.
   */
  devicesOf(w: T): Record<string, number> {
    const wanted: Record<string, number> = {};
    const members = w.workers ?? 1;
    for (const kind of Object.keys(this.devices)) {
      const total = w.requests?.[kind] ?? 0;
      if (total > 0) wanted[kind] = Math.ceil(total / members) * members;
    }
    return wanted;
  }

  get key(): string {
    return poolKey(this.kind, this.name);
  }

  /** Units the waiter takes: a gang's workers from a factory, else one. */
  unitsOf(w: T): number {
    return this.kind === 'factory' ? (w.workers ?? 1) : 1;
  }

  /** The next waiter, its units now counted as in use; undefined when it does not fit or nobody waits. */
  take(): T | undefined {
    const head = this.waitlist.peek();
    if (!head) return undefined;
    const units = this.unitsOf(head);
    if (this.inUse + units > this.capacity) return this.backfill(head);
    const short = this.shortOf(head);
    if (short.length === 0) return this.hand(head);
    // The head waits for devices alone. A job behind it that takes none of those devices may go
    // ahead, so long as the workers the head needs stay free: it cannot delay the head's start,
    // which only a device's release can bring (and a CPU job no longer idles behind a GPU job).
    for (const w of this.waitlist.values()) {
      if (w === head || this.inUse + this.unitsOf(w) + units > this.capacity) continue;
      const wanted = this.devicesOf(w);
      if (short.some((kind) => (wanted[kind] ?? 0) > 0) || this.shortOf(w).length > 0) continue;
      return this.hand(w);
    }
    return undefined;
  }

  /**
   * A job behind a head that waits for units, handed out now if it cannot delay the head's
   * reservation; undefined when none can go (or nothing tells when units come free).
   */
  private backfill(head: T): T | undefined {
    const when = this.reservation(this.unitsOf(head));
    if (!when) return undefined;
    const now = this.plan!.now();
    const free = this.capacity - this.inUse;
    const wantedByHead = this.devicesOf(head);
    for (const w of this.waitlist.values()) {
      const units = this.unitsOf(w);
      if (w === head || units > free || this.shortOf(w).length > 0) continue;
      // Devices the head will want too stay out of this: its reservation counts workers only.
      const wanted = this.devicesOf(w);
      if (Object.keys(wanted).some((kind) => (wantedByHead[kind] ?? 0) > 0 && (wanted[kind] ?? 0) > 0))
        continue;
      const endsBefore =
        w.timeoutSeconds !== undefined &&
        w.timeoutSeconds !== null &&
        now + w.timeoutSeconds * 1000 + this.plan!.graceMs <= when.at;
      if (endsBefore || when.spare >= units) return this.hand(w);
    }
    return undefined;
  }

  /**
   * When `units` are expected free (the in-use units end, earliest first), and how many units
   * beyond those are free then; undefined when that time is not known.
   */
  private reservation(units: number): { at: number; spare: number } | undefined {
    if (!this.plan) return undefined;
    const ends = [...this.plan.ends()].sort((a, b) => a.at - b.at);
    let free = this.capacity - this.inUse;
    let at: number | undefined;
    for (const e of ends) {
      if (at !== undefined && e.at > at) break;
      if (!Number.isFinite(e.at)) return undefined;
      free += e.units;
      if (free >= units) at = e.at;
    }
    return at === undefined ? undefined : { at, spare: free - units };
  }

  /** The device kinds of which too few are free for the waiter. */
  private shortOf(w: T): string[] {
    return Object.entries(this.devicesOf(w))
      .filter(([kind, n]) => (this.devicesInUse[kind] ?? 0) + n > this.devices[kind]!)
      .map(([kind]) => kind);
  }

  /** Takes the waiter off the line, its workers and devices counted as in use. */
  private hand(w: T): T {
    const head = this.waitlist.peek();
    this.wentAheadOf = head === w ? undefined : head;
    this.inUse += this.unitsOf(w);
    this.hold(this.devicesOf(w));
    this.waitlist.remove(w.id);
    return w;
  }

  /** Counts `devices` as held (taken now, or by a worker that outlived a restart). */
  hold(devices: Record<string, number> = {}): void {
    for (const [kind, n] of Object.entries(devices))
      this.devicesInUse[kind] = (this.devicesInUse[kind] ?? 0) + n;
  }

  free(units = 1, devices: Record<string, number> = {}): void {
    this.inUse = Math.max(0, this.inUse - units);
    for (const [kind, n] of Object.entries(devices))
      this.devicesInUse[kind] = Math.max(0, (this.devicesInUse[kind] ?? 0) - n);
  }

  /** "waiting for resource licence: 2/2 in use; position 1", "waiting for 4 workers at once from factory f: …" */
  /** Job `id` no longer waits here. */
  leave(id: number): void {
    this.waitlist.remove(id);
  }

  describeWait(id: number): string {
    const waiter = this.waitlist.find((w) => w.id === id);
    const units = waiter ? this.unitsOf(waiter) : 1;
    // Waiting for devices rather than a worker: say which.
    const short = Object.entries(waiter ? this.devicesOf(waiter) : {}).find(
      ([kind, n]) => (this.devicesInUse[kind] ?? 0) + n > this.devices[kind]!,
    );
    if (short && this.inUse + units <= this.capacity) {
      const [kind, n] = short;
      return `waiting for ${n} ${kind} of factory ${this.name}: ${this.devicesInUse[kind] ?? 0}/${this.devices[kind]} in use; position ${this.waitlist.position(id)}`;
    }
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
  of(h: { kind: 'worker' | 'instance'; provider: string }): Pool<T> | undefined {
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
        ...(Object.keys(p.devices).length > 0
          ? {
              devices: Object.entries(p.devices).map(([kind, total]) => ({
                kind,
                total,
                inUse: p.devicesInUse[kind] ?? 0,
              })),
            }
          : {}),
      }));
  }
}
