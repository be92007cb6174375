/**
 * Group commit: units of work that arrive while a transaction is being written share the next
 * one. A unit must not wait for another unit (it would wait for its own batch to end). A unit
 * that throws fails alone: the others commit together (see commit). A commit costs the same
 * whether it carries one job or a hundred (the WAL pages they touch are written once), so under
 * load this multiplies write throughput. The units' events are inserted together by one statement
 * just before the commit (queries/events.ts): on PostgreSQL each statement is a round trip. */
import { sql } from 'kysely';
import { setTimeout as delay } from 'node:timers/promises';
import { isTransientConflict } from './errors.js';
import { WriteBehindError } from './pg-write-behind.js';
import { deferEvents, flushEvents } from './queries/events.js';
import type { Db, Store } from './store.js';

/** Times a batch is run again after PostgreSQL broke a deadlock by failing it. */
const CONFLICT_RETRIES = 5;

/**
 * Lets the group commits of one process write one transaction at a time. On PostgreSQL two
 * transactions of one server (the submissions' and the controller's) would otherwise take the
 * same rows (a project's job counts, a job's row) in different orders, and deadlock.
 */
export class WriteTurns {
  private tail: Promise<unknown> = Promise.resolve();

  take<T>(fn: () => Promise<T>): Promise<T> {
    const turn = this.tail.then(fn);
    this.tail = turn.catch(() => {});
    return turn;
  }
}

/** A unit failed in a way that dooms its whole batch to be run again (see commit). */
class RunBatchAgain extends Error {
  constructor(
    readonly conflict: unknown,
    /** Run again with a savepoint around each unit, so that the failing one fails alone. */
    readonly guard = false,
  ) {
    super('run the batch again');
  }
}

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
  /** Shared with the other group commits of this process on the same store. */
  turns?: WriteTurns;
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
        let outcomes: { ok: boolean; value: unknown }[];
        const began = performance.now();
        try {
          outcomes = await this.commit(batch);
        } catch (e) {
          for (const unit of batch) unit.reject(e); // the commit itself failed: nothing landed
          continue;
        } finally {
          this.store.observer?.batch(batch.length, (performance.now() - began) / 1000);
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

  /**
   * Writes one batch. Units run one after the other; should one fail, the batch is rolled back
   * and run again with a savepoint around each unit, so that the failing unit alone is rolled
   * back and gets its error (savepoints cost two round trips per unit on PostgreSQL, and units
   * seldom fail). A unit chosen as a deadlock's victim (another replica's transaction took the
   * same rows in another order) would fail again at once while this transaction keeps the rows
   * its earlier units took: the whole batch is rolled back, releasing them, and run again.
   * Nothing of a rolled-back batch has landed or resolved. The units' events are inserted
   * together at the end, and on PostgreSQL their writes are sent together (store.writeBehind):
   * when those fail, the batch is run again, guarded, with each unit's events and writes sent in
   * place, to learn whose they were.
   */
  private async commit(batch: Unit[]): Promise<{ ok: boolean; value: unknown }[]> {
    let guarded = false;
    for (let attempt = 0; ; attempt++) {
      const outcomes: { ok: boolean; value: unknown }[] = [];
      try {
        const write = () =>
          // Read committed: its units do not check-then-write against each other's tables the
          // way the services' do.
          this.store.transaction(
            async (tx) => {
              await this.opts.fence?.(tx);
              if (!guarded) {
                await this.store.writeBehind?.(tx);
                deferEvents(tx);
              }
              for (const unit of batch) {
                if (!guarded) {
                  try {
                    outcomes.push({ ok: true, value: await unit.fn(tx) });
                  } catch (e) {
                    const conflict = isTransientConflict(e) && attempt < CONFLICT_RETRIES;
                    throw new RunBatchAgain(e, !conflict);
                  }
                  continue;
                }
                await sql`savepoint unit`.execute(tx);
                try {
                  outcomes.push({ ok: true, value: await unit.fn(tx) });
                  await sql`release savepoint unit`.execute(tx);
                } catch (e) {
                  if (isTransientConflict(e) && attempt < CONFLICT_RETRIES) throw new RunBatchAgain(e);
                  await sql`rollback to savepoint unit`.execute(tx);
                  await sql`release savepoint unit`.execute(tx);
                  outcomes.push({ ok: false, value: e });
                }
              }
              if (!guarded) {
                try {
                  await flushEvents(tx);
                } catch (e) {
                  // Whose event failed is not known: each unit on its own, its events with it.
                  throw new RunBatchAgain(e, !(isTransientConflict(e) && attempt < CONFLICT_RETRIES));
                }
              }
              await this.opts.beforeCommit?.(tx);
            },
            { isolation: 'read-committed' },
          );
        await (this.opts.turns ? this.opts.turns.take(write) : write());
        return outcomes;
      } catch (thrown) {
        // Writes sent together failed, and which unit's is not known: each unit on its own now.
        const e =
          thrown instanceof WriteBehindError && !isTransientConflict(thrown) && !guarded
            ? new RunBatchAgain(thrown.cause, true)
            : thrown;
        if (e instanceof RunBatchAgain && e.guard) {
          // A batch of one needs no second run: its only unit failed, and nothing landed. Unless
          // its kept writes failed: their error is the combined statement's, and the unit's own
          // (a constraint, a bad value) is learnt by running it again.
          if (batch.length === 1 && !(thrown instanceof WriteBehindError))
            return [{ ok: false, value: e.conflict }];
          guarded = true;
          continue;
        }
        const again = e instanceof RunBatchAgain || (isTransientConflict(e) && attempt < CONFLICT_RETRIES);
        if (!again) throw e instanceof RunBatchAgain ? e.conflict : e;
        await delay(5 + Math.random() * 20 * (attempt + 1)); // let the other transaction finish
      }
    }
  }
}
