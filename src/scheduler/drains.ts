/**
 * HoldAndDrain (Kueue's stop policy): a queue that holds admits nothing, and each workload it had
 * admitted is sent a drain decision, oldest admission first, a pass's `max` at a time. Kept apart
 * from the scheduler's passes, which only call `emit` before their rounds.
 */
import type { AdmittedNode, QueueState } from './queue-state.js';
import type { Decision, JobId } from './types.js';

export class Drains {
  /** Queues with drain decisions still to emit. */
  private readonly queues = new Set<QueueState>();

  constructor(
    private readonly admittedOf: (id: JobId) => AdmittedNode | undefined,
    /** Stops counting `rec` as active (its quota stays held until it stops). */
    private readonly deactivate: (rec: AdmittedNode) => void,
  ) {}

  /** After `q`'s definition changed: drain what it holds if its policy says so, else nothing. */
  set(q: QueueState): void {
    if (q.model?.stopPolicy === 'HoldAndDrain') {
      q.drain = [...q.admitted.values()]
        .filter((r) => r.evicting === null)
        .sort((a, b) => a.seq - b.seq)
        .map((r) => r.id);
      if (q.drain.length > 0) this.queues.add(q);
    } else {
      q.drain = [];
      this.queues.delete(q);
    }
    q.drainNext = 0;
  }

  /** A workload restored as admitted in a queue being drained: it is drained too. */
  add(q: QueueState, id: JobId): void {
    q.drain.push(id);
    this.queues.add(q);
  }

  /** `q` is no longer defined. */
  forget(q: QueueState): void {
    q.drain = [];
    q.drainNext = 0;
    this.queues.delete(q);
  }

  /** Appends drain decisions to `out` until it holds `max`. */
  emit(out: Decision[], max: number): void {
    for (const q of this.queues) {
      while (q.drainNext < q.drain.length && out.length < max) {
        const id = q.drain[q.drainNext++] as JobId;
        const rec = this.admittedOf(id);
        if (rec === undefined || rec.holder !== q || rec.evicting !== null) continue;
        this.deactivate(rec);
        rec.evicting = 'drained';
        out.push({
          kind: 'drain',
          id,
          queue: q.name,
          reason: `queue ${q.name} is being drained (HoldAndDrain)`,
        });
      }
      if (q.drainNext >= q.drain.length) {
        q.drain = [];
        q.drainNext = 0;
        this.queues.delete(q);
      }
      if (out.length >= max) return;
    }
  }
}
