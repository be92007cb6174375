/**
 * Quota arithmetic per QUEUEING.md: a queue's private part (nominal − lendingLimit) is its own;
 * the rest of every member's nominal forms the cohort pool; a queue may use its private part plus
 * whatever the pool has free, never more than nominal + borrowingLimit; outside a cohort, exactly
 * its nominal. Only the resources a queue names in `nominal` are limited by it.
 */
import type { Amounts } from '../domain/quantity.js';
import type { QueueModel } from './types.js';
import { addTo, type ResourceIndex, type Vec } from './resources.js';

/** A queue's limits, per resource it names (parallel arrays, `idx` into the ResourceIndex). */
export interface Limits {
  idx: number[];
  names: string[];
  nominal: number[];
  /** The most the queue may ever use: nominal outside a cohort, else nominal + borrowingLimit (or ∞). */
  cap: number[];
  /** nominal − lend: what no one else may use. */
  priv: number[];
  /** What the queue puts in its cohort's pool. */
  lend: number[];
}

export const NO_LIMITS: Limits = { idx: [], names: [], nominal: [], cap: [], priv: [], lend: [] };

export function limitsOf(model: QueueModel, res: ResourceIndex): Limits {
  const l: Limits = { idx: [], names: [], nominal: [], cap: [], priv: [], lend: [] };
  for (const name of Object.keys(model.nominal).sort()) {
    const n = Math.max(0, model.nominal[name] ?? 0);
    const borrow = model.borrowingLimit[name];
    const lendLimit = model.lendingLimit[name];
    const lend = lendLimit === undefined ? n : Math.min(Math.max(0, lendLimit), n);
    l.idx.push(res.id(name));
    l.names.push(name);
    l.nominal.push(n);
    l.cap.push(model.cohort === null ? n : borrow === undefined ? Infinity : n + Math.max(0, borrow));
    l.priv.push(n - lend);
    l.lend.push(lend);
  }
  return l;
}

/** A cohort's shared pool: per resource, what members lend and how much of it is in use. */
export interface Pool {
  readonly name: string;
  pool: Vec;
  used: Vec;
}

/** Anything that holds quota: a queue's limits, its usage and its cohort. */
export interface Holder {
  limits: Limits;
  /** What its admitted workloads hold, plus `reserved`: all of it counts against room. */
  usage: Vec;
  /**
   * The part of `usage` reserved for preemptors of this queue that wait for their victims to stop:
   * it counts against room (nobody else may take it) but is not the queue's own use (it does not
   * make the queue a borrower, nor appear in its figures).
   */
  reserved: Vec;
  cohort: Pool | null;
}

/** How much of the j-th limited resource one more workload may take now. */
export function room(h: Holder, j: number): number {
  const l = h.limits;
  const i = l.idx[j] ?? 0;
  const u = h.usage[i] ?? 0;
  const own = (l.cap[j] ?? 0) - u;
  if (h.cohort === null) return own;
  const priv = Math.max(0, (l.priv[j] ?? 0) - u);
  const free = Math.max(0, (h.cohort.pool[i] ?? 0) - (h.cohort.used[i] ?? 0));
  return Math.min(own, priv + free);
}

/** Whether `req` fits now; with `withinNominal`, also without going above nominal (no borrowing). */
export function fits(h: Holder, req: Vec, withinNominal = false): boolean {
  const l = h.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    const x = req[i] ?? 0;
    if (x <= 0) continue;
    if (x > room(h, j)) return false;
    if (withinNominal && (h.usage[i] ?? 0) + x > (l.nominal[j] ?? 0)) return false;
  }
  return true;
}

/** Whether admitting `req` would take the queue above nominal in some resource. */
export function wouldBorrow(h: Holder, req: Vec): boolean {
  const l = h.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    const x = req[i] ?? 0;
    if (x > 0 && (h.usage[i] ?? 0) + x > (l.nominal[j] ?? 0)) return true;
  }
  return false;
}

/** Per resource, how much of `req` lands above nominal (the part borrowed from the cohort). */
export function borrowedFor(h: Holder, req: Vec): Amounts {
  const out: Amounts = {};
  const l = h.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    const x = req[i] ?? 0;
    if (x <= 0) continue;
    const u = h.usage[i] ?? 0;
    const n = l.nominal[j] ?? 0;
    const b = Math.max(0, u + x - n) - Math.max(0, u - n);
    if (b > 0) out[l.names[j] ?? ''] = b;
  }
  return out;
}

/** What the queue's admitted workloads hold of resource `i` (usage without reservations). */
export function ownUsage(h: Holder, i: number): number {
  return (h.usage[i] ?? 0) - (h.reserved[i] ?? 0);
}

/** Usage of admitted workloads above nominal, per limited resource. */
export function borrowedNow(h: Holder): Amounts {
  const out: Amounts = {};
  const l = h.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const b = ownUsage(h, l.idx[j] ?? 0) - (l.nominal[j] ?? 0);
    if (b > 0) out[l.names[j] ?? ''] = b;
  }
  return out;
}

/** Whether the queue's admitted workloads use more than its nominal in one of `among` (resource indices). */
export function isBorrowing(h: Holder, among: readonly number[] | null): boolean {
  const l = h.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    if (among !== null && !among.includes(i)) continue;
    if (ownUsage(h, i) > (l.nominal[j] ?? 0)) return true;
  }
  return false;
}

/** Counts (sign 1) or uncounts (-1) `req` in the queue and in its cohort's pool. */
export function applyUsage(h: Holder, req: Vec, sign: 1 | -1): void {
  const c = h.cohort;
  const l = h.limits;
  if (c !== null) {
    for (let j = 0; j < l.idx.length; j++) {
      const i = l.idx[j] ?? 0;
      const x = req[i] ?? 0;
      if (x === 0) continue;
      const u = h.usage[i] ?? 0;
      const p = l.priv[j] ?? 0;
      const delta = Math.max(0, u + sign * x - p) - Math.max(0, u - p);
      if (delta === 0) continue;
      while (c.used.length <= i) c.used.push(0);
      c.used[i] = (c.used[i] ?? 0) + delta;
    }
  }
  addTo(h.usage, req, sign);
}

/** Recomputes a pool from its members, after a definition or membership change. */
export function recomputePool(c: Pool, members: Iterable<Holder>): void {
  c.pool = [];
  c.used = [];
  for (const m of members) {
    const l = m.limits;
    for (let j = 0; j < l.idx.length; j++) {
      const i = l.idx[j] ?? 0;
      while (c.pool.length <= i) c.pool.push(0);
      while (c.used.length <= i) c.used.push(0);
      c.pool[i] = (c.pool[i] ?? 0) + (l.lend[j] ?? 0);
      c.used[i] = (c.used[i] ?? 0) + Math.max(0, (m.usage[i] ?? 0) - (l.priv[j] ?? 0));
    }
  }
}
