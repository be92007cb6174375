/**
 * Resource names ↔ dense indices, so that quota arithmetic runs over small arrays of numbers
 * instead of string-keyed objects (faster, and a fraction of the memory per queued workload).
 */
import type { Amounts } from '../domain/quantity.js';

/** Amounts indexed by `ResourceIndex`; entries past the end of the array are 0. */
export type Vec = number[];

export class ResourceIndex {
  private readonly ids = new Map<string, number>();
  readonly names: string[] = [];

  id(name: string): number {
    let i = this.ids.get(name);
    if (i === undefined) {
      i = this.names.length;
      this.ids.set(name, i);
      this.names.push(name);
    }
    return i;
  }

  name(i: number): string {
    return this.names[i] ?? `#${i}`;
  }

  /**
   * The vecs of frozen amounts, made once: the jobs of one spec share one frozen requests object
   * (controller/tracked-jobs.ts), and a vec per job cost ~80 bytes of each of a million queued jobs
   * (issue #18). Shared safely: a workload's vec is only ever read (sums, usage and minimums are
   * vecs of their own), and frozen amounts cannot change under their vec.
   */
  private readonly frozenVecs = new WeakMap<Amounts, Vec>();

  vec(amounts: Amounts): Vec {
    if (!Object.isFrozen(amounts)) return this.newVec(amounts);
    let v = this.frozenVecs.get(amounts);
    if (v === undefined) this.frozenVecs.set(amounts, (v = this.newVec(amounts)));
    return v;
  }

  private newVec(amounts: Amounts): Vec {
    for (const name of Object.keys(amounts)) this.id(name);
    const v: Vec = new Array<number>(this.names.length).fill(0);
    for (const [name, amount] of Object.entries(amounts)) if (amount > 0) v[this.id(name)] = amount;
    return v;
  }

  /** The non-zero entries of `v` as an Amounts map. */
  amounts(v: Vec): Amounts {
    const out: Amounts = {};
    for (let i = 0; i < v.length; i++) {
      const x = v[i] ?? 0;
      if (x !== 0) out[this.name(i)] = x;
    }
    return out;
  }
}

/** target += sign × v, growing target as needed. */
export function addTo(target: Vec, v: Vec, sign: 1 | -1): void {
  for (let i = 0; i < v.length; i++) {
    const x = v[i] ?? 0;
    if (x === 0) continue;
    while (target.length <= i) target.push(0);
    target[i] = (target[i] ?? 0) + sign * x;
  }
}

/** Element-wise minimum; a missing entry counts as 0 (that workload does not request it). */
export function minInto(target: Vec, v: Vec): void {
  const n = Math.max(target.length, v.length);
  for (let i = 0; i < n; i++) target[i] = Math.min(target[i] ?? 0, v[i] ?? 0);
}
