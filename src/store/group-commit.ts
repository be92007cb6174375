/**
 * Group commit: units of work that arrive while a transaction is being written share the next
 * one. A unit must not wait for another unit (it would wait for its own batch to end). Each unit
 * runs inside its own savepoint, so a unit that throws is rolled back alone and gets its own
 * error, while the others commit together. A commit costs the same whether it carries one job or
 * a hundred (the WAL pages they touch are written once), so under load this multiplies write
 * throughput; with no concurrency it adds nothing but one savepoint.
 */
import { sql } from 'kysely';
import type { Db, Store } from './store.js';

interface Unit {
  fn: (tx: Db) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

export interface GroupCommitOptions {
  /** Units per transaction at most (256). */
  maxBatch?: number;
  /** Runs first in every transaction; throws to refuse the whole batch (a deposed leader's). */
  fence?: (tx: Db) => Promise<void>;
  /** Runs last in every transaction, after its units (e.g. one notification for the batch). */
  beforeCommit?: (tx: Db) => Promise<void>;
}

export class GroupCommit {
  private queue: Unit[] = [];
  private running = false;

  constructor(
    private readonly store: Store,
    private readonly opts: GroupCommitOptions = {},
  ) {}

  run<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (this.running) return;
      this.running = true;
      // A transaction here never yields to the event loop (the driver is synchronous), so work
      // arriving "during" one would never exist: collect instead what this turn of the event loop
      // writes (every request it read, every timer it ran) and commit it together.
      setImmediate(() => void this.drain());
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.opts.maxBatch ?? 256);
        const outcomes: { ok: boolean; value: unknown }[] = [];
        try {
          // Read committed: a batch is never run again (its units resolve once), and its units do
          // not check-then-write against each other's tables the way the services' do.
          await this.store.transaction(
            async (tx) => {
              await this.opts.fence?.(tx);
              for (const unit of batch) {
                await sql`savepoint unit`.execute(tx);
                try {
                  outcomes.push({ ok: true, value: await unit.fn(tx) });
                  await sql`release savepoint unit`.execute(tx);
                } catch (e) {
                  await sql`rollback to savepoint unit`.execute(tx);
                  await sql`release savepoint unit`.execute(tx);
                  outcomes.push({ ok: false, value: e });
                }
              }
              await this.opts.beforeCommit?.(tx);
            },
            { isolation: 'read-committed' },
          );
        } catch (e) {
          for (const unit of batch) unit.reject(e); // the commit itself failed: nothing landed
          continue;
        }
        batch.forEach((unit, i) => {
          const o = outcomes[i]!;
          if (o.ok) unit.resolve(o.value);
          else unit.reject(o.value);
        });
        // A backlog (the records of a burst of thousands of jobs) is written one batch per turn
        // of the event loop, so that requests are still answered meanwhile.
        if (this.queue.length > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      this.running = false;
    }
  }
}
