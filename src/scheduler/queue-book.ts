/**
 * The scheduler's book of queues and cohorts (scheduler.ts keeps the workloads and decisions):
 * each queue's state by name, the cohorts they share pools in, the projects' fair-share weights,
 * and which queues may be able to do something in the next pass. Capacity that may have grown in
 * a queue starts a new epoch in it and its cohort, which makes every parked workload there
 * eligible again in O(1) per queue.
 */
import { CohortState } from './cohort.js';
import type { OrderKey } from './ordering.js';
import { QueueState } from './queue-state.js';

export class QueueBook {
  readonly queues = new Map<string, QueueState>();
  private readonly cohorts = new Map<string, CohortState<QueueState>>();
  private readonly weights = new Map<string, number>();
  /** Queues that may be able to do something in the next pass. */
  readonly ready = new Set<QueueState>();
  private epochs = 1;

  readonly weightOf = (project: string): number => this.weights.get(project) ?? 1;

  /** `reachOf`: how far a queue's preemption reaches (the scheduler caches it). */
  constructor(private readonly reachOf: (q: QueueState) => OrderKey | null) {}

  /** The queue named, made (empty, with no definition) the first time it is named. */
  queue(name: string): QueueState {
    let q = this.queues.get(name);
    if (q === undefined) {
      q = new QueueState(name, this.weightOf, this.reachOf);
      this.queues.set(name, q);
    }
    return q;
  }

  /**
   * Puts `q` in the cohort named (null: none): the pools of the cohort it leaves and of the one
   * it is in are recomputed, and their members woken.
   */
  setCohort(q: QueueState, name: string | null): void {
    const before = q.cohort;
    const after = name === null ? null : this.cohort(name);
    if (before !== after) {
      before?.members.delete(q);
      after?.members.add(q);
      q.cohort = after;
      this.resetCohort(before);
    }
    this.resetCohort(after);
  }

  /** Forgets a removed queue's name, once nothing of it is left to keep. */
  forget(q: QueueState): void {
    if (q.forgettable) this.queues.delete(q.name);
  }

  setWeight(project: string, weight: number): void {
    this.weights.set(project, weight);
    for (const q of this.queues.values()) {
      const lane = q.lanes.get(project);
      if (lane === undefined) continue;
      q.updateShare(lane);
      if (q.model !== null) this.ready.add(q);
    }
  }

  projectWeights(): Iterable<[string, number]> {
    return this.weights.entries();
  }

  /** Capacity may have grown in `q` (and so in its cohort): a new epoch there. */
  bump(q: QueueState): void {
    const e = ++this.epochs;
    const members = q.cohort === null ? [q] : q.cohort.members;
    for (const m of members) {
      m.epoch = e;
      if (m.model !== null) this.ready.add(m);
    }
  }

  private cohort(name: string): CohortState<QueueState> {
    let c = this.cohorts.get(name);
    if (c === undefined) {
      c = new CohortState<QueueState>(name);
      this.cohorts.set(name, c);
    }
    return c;
  }

  /** After a membership or definition change: recompute the pool, wake every member. */
  private resetCohort(c: CohortState<QueueState> | null): void {
    if (c === null) return;
    if (c.members.size === 0) {
      this.cohorts.delete(c.name);
      return;
    }
    c.recompute();
    const e = ++this.epochs;
    for (const m of c.members) {
      m.epoch = e;
      this.ready.add(m);
    }
  }
}
