/**
 * WAL checkpoints of the SQLite store, off the server's connection. SQLite's own
 * (`wal_autocheckpoint`) runs inside the commit that crosses the threshold, on the committing
 * connection: the store's only one, on the event loop. The retention sweep writes the WAL full
 * again and again, and each checkpoint then held every request for 45–60 ms at 200,000 jobs (the
 * commit that ran it, traced), longer in a 13 GB file that the page cache no longer holds.
 *
 * Here the server's connection never checkpoints (`wal_autocheckpoint = 0`). Once its WAL has
 * grown past `startBytes` (a busy server; a quiet one or a test never gets there), a worker thread
 * opens a second connection and runs `wal_checkpoint(PASSIVE)` every `everyMs`: it copies what is
 * committed into the database file beside the writer, never waits for it and never holds it up.
 * Should the thread fail, the server's connection checkpoints again as it used to.
 *
 * The WAL is reused from its start only by a write transaction that begins once a checkpoint has
 * caught up with all of it (and `journal_size_limit` then cuts the file back at its commit). Under
 * a steady run of writes the checkpoint never quite catches up: the sweep of a million jobs grew
 * the WAL past 2.4 GB at 40 MB/s. So a long run of background writes calls `settle` between its
 * transactions: while the WAL file is over the limit it waits (at most `settleMs`) for a
 * checkpoint that has copied everything, and its next transaction starts the WAL again.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as delay } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';

/** `wal_autocheckpoint` of the server's connection when it checkpoints itself (pages). */
export const OWN_AUTOCHECKPOINT = 10_000;
/** The WAL file's size a checkpoint leaves it at, at most (`journal_size_limit`, bytes). */
export const WAL_SIZE_LIMIT = 16 * 1024 * 1024;

/** What `wal_checkpoint` answers: whether it was kept from finishing, frames in the WAL, frames copied. */
interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

export interface CheckpointOptions {
  /** The WAL's size (bytes) from which the thread starts; looked at every `everyMs`. */
  startBytes?: number;
  /** How often the thread checkpoints (a checkpoint with nothing to copy costs next to nothing). */
  everyMs?: number;
  /** The WAL file's size over which `settle` waits (and a checkpoint cuts it back to). */
  sizeLimitBytes?: number;
  /** The longest `settle` waits. */
  settleMs?: number;
}

/** The thread's code: CommonJS, evaluated (no file of its own to find under dist/ or tsx). */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('journal_size_limit = ' + workerData.sizeLimit);
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)')[0];
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', (m) => {
  // Asked: one now, and what it says (frames in the WAL, and of them copied into the file).
  if (m === 'now') return parentPort.postMessage(checkpoint());
  if (m !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export class Checkpoints {
  private worker: Worker | undefined;
  private failed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly startBytes: number;
  private readonly everyMs: number;
  private readonly sizeLimit: number;
  private readonly settleMs: number;
  /** Those waiting for the answer to a checkpoint asked for (`ask`), in order. */
  private asked: ((r: CheckpointResult | undefined) => void)[] = [];
  constructor(
    private readonly sqlite: BetterSqlite3.Database,
    private readonly file: string,
    o: CheckpointOptions = {},
  ) {
    this.startBytes = o.startBytes ?? 4 * 1024 * 1024;
    this.everyMs = o.everyMs ?? 100;
    this.sizeLimit = o.sizeLimitBytes ?? WAL_SIZE_LIMIT;
    this.settleMs = o.settleMs ?? 1000;
    sqlite.pragma('wal_autocheckpoint = 0');
    sqlite.pragma(`journal_size_limit = ${this.sizeLimit}`);
    this.timer = setInterval(() => this.look(), this.everyMs);
    this.timer.unref();
  }

  /** Whether the thread runs (for tests). */
  get threaded(): boolean {
    return this.worker !== undefined;
  }

  private walBytes(): number {
    try {
      return statSync(`${this.file}-wal`).size;
    } catch {
      return 0; // no WAL file yet
    }
  }

  private look(): void {
    if (!this.worker && !this.failed && this.walBytes() >= this.startBytes) this.start();
  }

  /**
   * See the top: while the WAL is over its limit, asks the thread for a checkpoint until one has
   * copied all of it (asked after the last write, so its answer is about every frame), for at
   * most `settleMs`.
   */
  async settle(): Promise<void> {
    const deadline = performance.now() + this.settleMs;
    this.look();
    while (this.worker && this.walBytes() > this.sizeLimit && performance.now() < deadline) {
      const r = await this.ask();
      if (!r || (r.busy === 0 && r.checkpointed >= r.log)) return;
      await delay(10); // a reader kept it from finishing: give it a moment
    }
  }

  private ask(): Promise<CheckpointResult | undefined> {
    return new Promise((resolve) => {
      this.asked.push(resolve);
      this.worker!.postMessage('now');
    });
  }

  private answered(r: CheckpointResult | undefined): void {
    this.asked.shift()?.(r);
  }

  private start(): void {
    clearInterval(this.timer);
    const worker = new Worker(THREAD, {
      eval: true,
      workerData: {
        module: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: this.file,
        everyMs: this.everyMs,
        sizeLimit: this.sizeLimit,
      },
    });
    worker.unref();
    worker.on('message', (r: CheckpointResult) => this.answered(r));
    const fail = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failed = true;
      for (const resolve of this.asked.splice(0)) resolve(undefined);
      if (this.sqlite.open) this.sqlite.pragma(`wal_autocheckpoint = ${OWN_AUTOCHECKPOINT}`);
    };
    worker.on('error', fail);
    worker.on('exit', fail);
    this.worker = worker;
  }

  /** Stops the thread (before the server's connection closes, which checkpoints what is left). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    const worker = this.worker;
    this.worker = undefined;
    for (const resolve of this.asked.splice(0)) resolve(undefined);
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref(); // the wait for its end keeps the process alive
    worker.postMessage('stop');
    await exited;
  }
}
