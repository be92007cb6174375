/**
 * The pending workloads of one project in one queue, as a treap in admission order.
 *
 * Each node is the workload itself (see workload-node.ts) and carries subtree aggregates, which
 * is what makes every question the scheduler asks O(log n):
 * - `size`: order statistics (positions, offsets);
 * - `minParked`: skip whole subtrees of workloads already found inadmissible in this capacity epoch;
 * - `m0`…`m3`, `minRest`: per resource, the smallest request below, to skip subtrees in which
 *   nothing can fit;
 * - `sum`: per resource, the total request below, to compute fair-share positions without a scan.
 *   Only positions need it, so it is recomputed lazily (`sumOf`): updates merely mark the path.
 * Treap priorities come from a seeded generator, so the shape (and the cost) is deterministic.
 */
import { compareKeys, type OrderKey } from './ordering.js';
import type { Vec } from './resources.js';
import type { WorkloadNode } from './workload-node.js';

/** Deterministic xorshift32 for treap priorities. */
export class TreapRandom {
  private state: number;
  constructor(seed = 0x9e3779b9) {
    this.state = seed >>> 0 || 1;
  }
  next(): number {
    let x = this.state;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.state = x >>> 0;
    return this.state;
  }
}

const sizeOf = (t: WorkloadNode | null): number => (t === null ? 0 : t.size);

/** Recomputes `n`'s aggregates from its children. */
function pull(n: WorkloadNode): void {
  const l = n.left;
  const r = n.right;
  const req = n.req;
  n.sumStale = l !== null || r !== null;
  if (!n.sumStale) n.sum = req;
  n.size = 1 + sizeOf(l) + sizeOf(r);
  let parked = n.parkedAt;
  let minTimeout = n.timeoutMs;
  let minPredicted = n.predictedMs;
  let m0 = req[0] ?? 0;
  let m1 = req[1] ?? 0;
  let m2 = req[2] ?? 0;
  let m3 = req[3] ?? 0;
  if (l !== null) {
    if (l.minParked < parked) parked = l.minParked;
    if (l.minTimeout < minTimeout) minTimeout = l.minTimeout;
    if (l.minPredicted < minPredicted) minPredicted = l.minPredicted;
    if (l.m0 < m0) m0 = l.m0;
    if (l.m1 < m1) m1 = l.m1;
    if (l.m2 < m2) m2 = l.m2;
    if (l.m3 < m3) m3 = l.m3;
  }
  if (r !== null) {
    if (r.minParked < parked) parked = r.minParked;
    if (r.minTimeout < minTimeout) minTimeout = r.minTimeout;
    if (r.minPredicted < minPredicted) minPredicted = r.minPredicted;
    if (r.m0 < m0) m0 = r.m0;
    if (r.m1 < m1) m1 = r.m1;
    if (r.m2 < m2) m2 = r.m2;
    if (r.m3 < m3) m3 = r.m3;
  }
  n.minParked = parked;
  n.minTimeout = minTimeout;
  n.minPredicted = minPredicted;
  n.first = l === null ? n : l.first;
  n.m0 = m0;
  n.m1 = m1;
  n.m2 = m2;
  n.m3 = m3;
  if (req.length > 4 || (l !== null && l.minRest !== null) || (r !== null && r.minRest !== null)) pullRest(n);
  else n.minRest = null;
}

/** The rare case of more than four resource names: minimums of the others, in an array. */
function pullRest(n: WorkloadNode): void {
  const l = n.left === null ? null : n.left.minRest;
  const r = n.right === null ? null : n.right.minRest;
  const len = Math.max(n.req.length - 4, l === null ? 0 : l.length, r === null ? 0 : r.length);
  const rest = new Array<number>(len).fill(0);
  for (let k = 0; k < len; k++) {
    // A resource missing from one side is a request of 0 there.
    rest[k] = Math.min(
      n.req[k + 4] ?? 0,
      l === null ? Infinity : (l[k] ?? 0),
      r === null ? Infinity : (r[k] ?? 0),
    );
  }
  n.minRest = rest;
}

/** The smallest request of resource `i` in `t`'s subtree. */
export function minOf(t: WorkloadNode, i: number): number {
  switch (i) {
    case 0:
      return t.m0;
    case 1:
      return t.m1;
    case 2:
      return t.m2;
    case 3:
      return t.m3;
    default:
      return t.minRest === null ? 0 : (t.minRest[i - 4] ?? 0);
  }
}

/** The per-resource request total of `t`'s subtree, recomputing stale sums on the way. */
export function sumOf(t: WorkloadNode): Vec {
  if (!t.sumStale) return t.sum;
  const l = t.left === null ? null : sumOf(t.left);
  const r = t.right === null ? null : sumOf(t.right);
  const req = t.req;
  const len = Math.max(req.length, l === null ? 0 : l.length, r === null ? 0 : r.length);
  let sum = t.sum;
  if (sum === req || sum.length !== len) sum = t.sum = new Array<number>(len).fill(0);
  for (let i = 0; i < len; i++)
    sum[i] = (req[i] ?? 0) + (l === null ? 0 : (l[i] ?? 0)) + (r === null ? 0 : (r[i] ?? 0));
  t.sumStale = false;
  return sum;
}

function split(t: WorkloadNode | null, key: OrderKey): [WorkloadNode | null, WorkloadNode | null] {
  if (t === null) return [null, null];
  if (compareKeys(t, key) < 0) {
    const [l, r] = split(t.right, key);
    t.right = l;
    pull(t);
    return [t, r];
  }
  const [l, r] = split(t.left, key);
  t.left = r;
  pull(t);
  return [l, t];
}

function merge(a: WorkloadNode | null, b: WorkloadNode | null): WorkloadNode | null {
  if (a === null) return b;
  if (b === null) return a;
  if (a.pri > b.pri) {
    a.right = merge(a.right, b);
    pull(a);
    return a;
  }
  b.left = merge(a, b.left);
  pull(b);
  return b;
}

export function insert(t: WorkloadNode | null, n: WorkloadNode): WorkloadNode {
  if (t === null) {
    pull(n);
    return n;
  }
  if (n.pri > t.pri) {
    const [l, r] = split(t, n);
    n.left = l;
    n.right = r;
    pull(n);
    return n;
  }
  if (compareKeys(n, t) < 0) t.left = insert(t.left, n);
  else t.right = insert(t.right, n);
  pull(t);
  return t;
}

export function remove(t: WorkloadNode | null, n: WorkloadNode): WorkloadNode | null {
  if (t === null) return null;
  if (t === n) {
    const rest = merge(n.left, n.right);
    n.left = null;
    n.right = null;
    pull(n);
    return rest;
  }
  // Admissions remove a lane's first node: follow `first` down the left spine without comparing.
  if (t.first === n || compareKeys(n, t) < 0) t.left = remove(t.left, n);
  else t.right = remove(t.right, n);
  pull(t);
  return t;
}

/** Recomputes the aggregates on the path to `n` after one of its own fields changed. */
export function touch(t: WorkloadNode | null, n: WorkloadNode): void {
  if (t === null) return;
  if (t !== n) touch(compareKeys(n, t) < 0 ? t.left : t.right, n);
  pull(t);
}

/** How many nodes come before `n`. */
export function rank(t: WorkloadNode | null, n: WorkloadNode): number {
  let before = 0;
  while (t !== null) {
    if (t === n) return before + sizeOf(t.left);
    if (compareKeys(n, t) < 0) t = t.left;
    else {
      before += sizeOf(t.left) + 1;
      t = t.right;
    }
  }
  return before;
}

/** out[j] = total request, for resource idx[j], of the nodes before `n`. */
export function prefixSum(
  t: WorkloadNode | null,
  n: WorkloadNode,
  idx: readonly number[],
  out: number[],
): void {
  out.length = idx.length;
  out.fill(0);
  const add = (v: Vec): void => {
    for (let j = 0; j < idx.length; j++) out[j] = (out[j] ?? 0) + (v[idx[j] ?? 0] ?? 0);
  };
  while (t !== null) {
    if (t === n) {
      if (t.left !== null) add(sumOf(t.left));
      return;
    }
    if (compareKeys(n, t) < 0) t = t.left;
    else {
      if (t.left !== null) add(sumOf(t.left));
      add(t.req);
      t = t.right;
    }
  }
}

/** What a candidate search may take: not parked in this epoch, and either fits or may preempt. */
export interface Eligibility {
  epoch: number;
  /** Resources the queue limits, and how much of each a workload may take now. */
  idx: readonly number[];
  room: readonly number[];
  /** Workloads before this key may be able to preempt, so fit alone does not rule them out. */
  reach: OrderKey | null;
  /** Backfill: the reservation workloads other than its own may not delay (null: none). */
  window: BackfillWindow | null;
}

/** What a Backfill reservation lets through (scheduler/backfill.ts): checked in the search. */
export interface BackfillWindow {
  /** The workload the reservation is for: not held back by it. */
  head: WorkloadNode;
  /** Every one of these must let a workload through (backfill.ts, `BackfillPlan.gates`). */
  gates: readonly WindowGate[];
  /**
   * Learned estimates: a lane offers the eligible workload predicted shortest (at the priority of
   * its first eligible one), not the first (`shortestEligible`): SJBF, the other half of EASY++.
   */
  shortestFirst: boolean;
  /** A workload created before this instant (ms) has waited long: nothing passes it over for SJBF. */
  agedBefore: number;
}

/** One gate of the reservation, as the search sees it. */
export interface WindowGate {
  /** How long a workload may be planned to run and still end before the reservation starts (ms). */
  within: number;
  /** What the reservation leaves, per limited resource (as `idx`). */
  left: readonly number[];
  /** Planned with predicted runtimes, not timeouts alone. */
  byPrediction: boolean;
}

/** Whether a workload planned to run `ms` ends before the gate's start. */
export const endsWithin = (g: WindowGate, ms: number): boolean => ms !== Infinity && ms <= g.within;

function exceedsLeft(v: Vec, e: Eligibility, left: readonly number[]): boolean {
  for (let j = 0; j < e.idx.length; j++) {
    const x = v[e.idx[j] ?? 0] ?? 0;
    if (x > 0 && x > (left[j] ?? 0)) return true;
  }
  return false;
}

/** Whether the window lets `t` through: its own workload, or one every gate lets through. */
function windowAllows(t: WorkloadNode, e: Eligibility): boolean {
  const w = e.window;
  if (w === null || t === w.head) return true;
  for (const g of w.gates)
    if (!endsWithin(g, g.byPrediction ? t.predictedMs : t.timeoutMs) && exceedsLeft(t.req, e, g.left))
      return false;
  return true;
}

/** Whether some gate of the window holds back every workload of `t`'s subtree. */
function windowHoldsAll(t: WorkloadNode, e: Eligibility): boolean {
  const w = e.window;
  if (w === null || t.first === w.head) return false;
  for (const g of w.gates) {
    if (endsWithin(g, g.byPrediction ? t.minPredicted : t.minTimeout)) continue;
    for (let j = 0; j < e.idx.length; j++) {
      const x = minOf(t, e.idx[j] ?? 0);
      if (x > 0 && x > (g.left[j] ?? 0)) return true;
    }
  }
  return false;
}

function exceeds(v: Vec, e: Eligibility): boolean {
  for (let j = 0; j < e.idx.length; j++) {
    const x = v[e.idx[j] ?? 0] ?? 0;
    if (x > 0 && x > (e.room[j] ?? 0)) return true;
  }
  return false;
}

/** Whether some resource's smallest request in the subtree is more than there is room for. */
function minExceeds(t: WorkloadNode, e: Eligibility): boolean {
  for (let j = 0; j < e.idx.length; j++) {
    const x = minOf(t, e.idx[j] ?? 0);
    if (x > 0 && x > (e.room[j] ?? 0)) return true;
  }
  return false;
}

export function canFit(v: Vec, e: Eligibility): boolean {
  return !exceeds(v, e);
}

/** Whether `t` is a candidate under `e`, not counting whether it is parked. */
export function offerable(t: WorkloadNode, e: Eligibility): boolean {
  return mayPreempt(t, e) || (!exceeds(t.req, e) && windowAllows(t, e));
}

export function mayPreempt(w: OrderKey, e: Eligibility): boolean {
  return e.reach !== null && compareKeys(w, e.reach) < 0;
}

/**
 * The first node that is eligible under `e`. Subtrees are skipped whole when all of their nodes
 * are parked, or when none of them may preempt and some resource's smallest request is already
 * more than there is room for, or (Backfill) none ends before the reservation by the subtree's
 * shortest timeout and some resource's smallest request is more than the reservation leaves; so the cost is O(log n), unless the room is short of different
 * resources for different workloads (per-resource minimums then overlap and the descent visits
 * each such workload once).
 */
export function firstEligible(t: WorkloadNode | null, e: Eligibility): WorkloadNode | null {
  if (t === null || t.minParked >= e.epoch) return null;
  if (!mayPreempt(t.first, e) && (minExceeds(t, e) || windowHoldsAll(t, e))) return null;
  const l = firstEligible(t.left, e);
  if (l !== null) return l;
  if (t.parkedAt < e.epoch && offerable(t, e)) return t;
  return firstEligible(t.right, e);
}

/**
 * How many nodes of `t` are eligible under `e` (not parked in its epoch, and offerable), skipping
 * whole subtrees as `firstEligible` does: O(k log n) for k eligible nodes (the metrics' count of
 * what a queue could admit now; scheduler-view.ts).
 */
export function countEligible(t: WorkloadNode | null, e: Eligibility): number {
  if (t === null || t.minParked >= e.epoch) return 0;
  if (!mayPreempt(t.first, e) && (minExceeds(t, e) || windowHoldsAll(t, e))) return 0;
  const self = t.parkedAt < e.epoch && offerable(t, e) ? 1 : 0;
  return countEligible(t.left, e) + self + countEligible(t.right, e);
}

/**
 * Backfill with learned estimates (Tsafrir, Etsion and Feitelson 2007: shortest job backfilled
 * first): of the workloads eligible under `e` at the priority of `first` (the first eligible in
 * queue order) and not before it, the one predicted to run shortest, the earliest in queue order
 * among equals. The reservation's own workload, if eligible, goes first, and so does `first` once
 * it has waited long (`agedBefore`): later ones are created later, so none has waited longer.
 * A branch and bound over the same pruning as `firstEligible` and the subtrees' shortest
 * predictions, the shorter child first so that the bound tightens at once: O(log n) when the
 * shortest is eligible, O(n) at worst (many short ones that do not fit).
 */
export function shortestEligible(t: WorkloadNode | null, e: Eligibility, first: WorkloadNode): WorkloadNode {
  const w = e.window;
  if (w === null || w.head === first || first.createdAt < w.agedBefore) return first;
  let best = first;
  const before = (ms: number, n: WorkloadNode): boolean =>
    ms < best.predictedMs || (ms === best.predictedMs && compareKeys(n, best) < 0);
  const visit = (n: WorkloadNode | null): void => {
    // Nothing below can beat `best`: no shorter prediction, nor an equal one earlier in the order.
    if (n === null || n.minParked >= e.epoch || !before(n.minPredicted, n.first)) return;
    if (!mayPreempt(n.first, e) && (minExceeds(n, e) || windowHoldsAll(n, e))) return;
    // Nodes up to `first` are not candidates, nor are those of a lower priority (after them).
    const after = compareKeys(n, first) > 0;
    if (after && n.priority === first.priority && before(n.predictedMs, n))
      if (n.parkedAt < e.epoch && offerable(n, e)) best = n;
    const l = after ? n.left : null;
    const r = n.priority >= first.priority ? n.right : null;
    if (l !== null && r !== null && r.minPredicted < l.minPredicted) {
      visit(r);
      visit(l);
    } else {
      visit(l);
      visit(r);
    }
  };
  visit(t);
  return best;
}

/** In-order iteration starting at the `skip`-th node, O(log n + k) for k nodes. */
export class Cursor {
  private readonly stack: WorkloadNode[] = [];

  constructor(root: WorkloadNode | null, skip = 0) {
    let t = root;
    while (t !== null) {
      const ls = sizeOf(t.left);
      if (skip < ls) {
        this.stack.push(t);
        t = t.left;
      } else if (skip === ls) {
        this.stack.push(t);
        break;
      } else {
        skip -= ls + 1;
        t = t.right;
      }
    }
  }

  next(): WorkloadNode | null {
    const n = this.stack.pop();
    if (n === undefined) return null;
    for (let t = n.right; t !== null; t = t.left) this.stack.push(t);
    return n;
  }
}
