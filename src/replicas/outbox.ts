/**
 * Control messages for the leader, sent inside the transaction that commits the change they
 * announce (a submission, a cancel request): PostgreSQL delivers a notification only if its
 * transaction commits, so the leader never hears of a change that did not happen, nor misses one
 * that did (but for a bus that was down: see messages.ts). The messages of one group-commit batch
 * go out as one notification, sent by the batch's `beforeCommit`.
 */
import { notify } from '../store/pg-bus.js';
import type { Db } from '../store/store.js';
import { CONTROL, type ControlMessage } from './messages.js';

export class Outbox {
  private readonly pending = new WeakMap<Db, ControlMessage[]>();

  /** Queues `m` in transaction `tx`; `flush(tx)` sends it before the transaction commits. */
  add(tx: Db, m: ControlMessage): void {
    const list = this.pending.get(tx);
    if (list) list.push(m);
    else this.pending.set(tx, [m]);
  }

  async flush(tx: Db): Promise<void> {
    const list = this.pending.get(tx);
    if (!list) return;
    this.pending.delete(tx);
    await notify(tx, CONTROL, list);
  }
}
