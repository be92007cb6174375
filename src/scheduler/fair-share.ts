/**
 * Fair share between the projects of one queue (dominant resource fairness): a project's share is
 * the largest, over the queue's limited resources, of usage / nominal, divided by its weight.
 * At equal priority the next workload comes from the project with the least share; at equal
 * share, from the project served least recently (in the queue's admission rounds, see
 * QueueState.round; never served first); then creation time and id.
 *
 * Positions follow the same rule, simulated as if nothing were released meanwhile: the k-th
 * pending workload of a project is reached when that project's share, counting its usage plus the
 * k−1 workloads before it, is the least. Those "tags" never decrease along a project's lane. The
 * project's recency at that moment is the round of its last real admission for its first pending
 * workload, and the current round for the k-th (k > 1), whose predecessor was admitted in this
 * very round in the simulation. So each workload gets the key (priority, tag, recency, creation,
 * id), every lane is sorted by it, and the admission order is the merge of all lanes by that key:
 * a position is a sum over lanes of one O(log n) descent each (the treap keeps per-subtree request
 * sums), O(P · log n) for P projects with pending work in the queue, never a scan of the backlog.
 * (Recency measured per admission rather than per round would make a workload's key depend on the
 * simulated order of every earlier one, and positions a simulation of the whole backlog.)
 */
import { IndexedHeap, type HeapItem } from './heap.js';
import { Cursor, prefixSum, sumOf } from './lane-tree.js';
import type { Lane } from './lane.js';
import { compareKeys } from './ordering.js';
import type { Limits } from './quota.js';
import type { Vec } from './resources.js';
import type { WorkloadNode } from './workload-node.js';

/** max_j (usage + acc + extra) / nominal, divided by weight; `acc` is indexed like limits.idx. */
export function dominantShare(
  l: Limits,
  usage: Vec,
  weight: number,
  acc: readonly number[] | null = null,
  extra: Vec | null = null,
): number {
  let s = 0;
  for (let j = 0; j < l.idx.length; j++) {
    const n = l.nominal[j] ?? 0;
    if (n <= 0) continue;
    const i = l.idx[j] ?? 0;
    let v = usage[i] ?? 0;
    if (acc !== null) v += acc[j] ?? 0;
    if (extra !== null) v += extra[i] ?? 0;
    const r = v / n;
    if (r > s) s = r;
  }
  return s / weight;
}

/** The simulated share at which `n` would be admitted. */
export function tagOf(lane: Lane, n: WorkloadNode, l: Limits, weight: number): number {
  const acc: number[] = [];
  prefixSum(lane.root, n, l.idx, acc);
  return dominantShare(l, lane.usage, weight, acc);
}

/** A pending workload's place in the simulated admission order, beyond its priority and queue order. */
export interface SimKey {
  /** Its tag: the share of its project once the workloads before it in its lane are admitted. */
  tag: number;
  /** Its project's recency then: the round of its latest admission (0: never). */
  served: number;
}

/** The recency of `n`'s project when `n` comes up: see the head of this file. */
export function servedAt(lane: Lane, n: WorkloadNode, round: number): number {
  return lane.root !== null && lane.root.first === n ? lane.served : round;
}

/** Whether a node of another lane, with its simulated key, is admitted before `x` (key `kx`). */
function before(n: WorkloadNode, tag: number, served: number, x: WorkloadNode, kx: SimKey): boolean {
  if (n.priority !== x.priority) return n.priority > x.priority;
  if (tag !== kx.tag) return tag < kx.tag;
  if (served !== kx.served) return served < kx.served;
  return compareKeys(n, x) < 0;
}

/**
 * How many workloads of `lane` (not x's own) come before `x` in the simulated admission order;
 * `round` is the queue's current admission round.
 */
export function countAhead(
  lane: Lane,
  l: Limits,
  weight: number,
  round: number,
  x: WorkloadNode,
  kx: SimKey,
): number {
  const acc = new Array<number>(l.idx.length).fill(0);
  const addAcc = (v: Vec): void => {
    for (let j = 0; j < l.idx.length; j++) acc[j] = (acc[j] ?? 0) + (v[l.idx[j] ?? 0] ?? 0);
  };
  let count = 0;
  let t = lane.root;
  const first = t === null ? null : t.first;
  while (t !== null) {
    const leftSum = t.left === null ? null : sumOf(t.left);
    const tag = dominantShare(l, lane.usage, weight, acc, leftSum);
    if (before(t, tag, t === first ? lane.served : round, x, kx)) {
      count += (t.left === null ? 0 : t.left.size) + 1;
      if (leftSum !== null) addAcc(leftSum);
      addAcc(t.req);
      t = t.right;
    } else t = t.left;
  }
  return count;
}

class LaneCursor implements HeapItem, SimKey {
  heapIndex = -1;
  current: WorkloadNode | null;
  tag = 0;
  served: number;
  private readonly it: Cursor;
  private readonly acc: number[];

  constructor(
    private readonly lane: Lane,
    private readonly l: Limits,
    private readonly weight: number,
    private readonly round: number,
  ) {
    this.it = new Cursor(lane.root);
    this.acc = new Array<number>(l.idx.length).fill(0);
    this.current = this.it.next();
    this.tag = dominantShare(l, lane.usage, weight, this.acc);
    this.served = lane.served;
  }

  advance(): void {
    const c = this.current;
    if (c === null) return;
    for (let j = 0; j < this.l.idx.length; j++)
      this.acc[j] = (this.acc[j] ?? 0) + (c.req[this.l.idx[j] ?? 0] ?? 0);
    this.current = this.it.next();
    this.tag = dominantShare(this.l, this.lane.usage, this.weight, this.acc);
    this.served = this.round;
  }
}

/**
 * Pending workloads of the given lanes in simulated admission order, from `offset`, at most
 * `limit`; `round` is the queue's current admission round. One lane: O(log n + limit). Several: a
 * k-way merge, O((offset + limit) · log P).
 */
export function mergedOrder(
  lanes: Lane[],
  l: Limits,
  weightOf: (project: string) => number,
  round: number,
  offset: number,
  limit: number,
): WorkloadNode[] {
  const out: WorkloadNode[] = [];
  if (limit <= 0) return out;
  const live = lanes.filter((lane) => lane.root !== null);
  if (live.length === 1) {
    const it = new Cursor(live[0]?.root ?? null, offset);
    for (let n = it.next(); n !== null && out.length < limit; n = it.next()) out.push(n);
    return out;
  }
  const heap = new IndexedHeap<LaneCursor>((a, b) => {
    const x = a.current;
    const y = b.current;
    if (x === null || y === null) return x !== null;
    return before(x, a.tag, a.served, y, b);
  });
  for (const lane of live) heap.push(new LaneCursor(lane, l, weightOf(lane.project), round));
  let skipped = 0;
  while (out.length < limit) {
    const top = heap.peek();
    if (top === undefined || top.current === null) break;
    if (skipped < offset) skipped++;
    else out.push(top.current);
    top.advance();
    if (top.current === null) heap.remove(top);
    else heap.update(top);
  }
  return out;
}
