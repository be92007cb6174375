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
 * The WAL is reused from its start by the first write after a checkpoint has caught up, and
 * `journal_size_limit` then cuts the file back. Should the thread fail, the server's connection
 * checkpoints again as it used to.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** `wal_autocheckpoint` of the server's connection when it checkpoints itself (pages). */
export const OWN_AUTOCHECKPOINT = 10_000;
/** The WAL file's size a checkpoint leaves it at, at most (`journal_size_limit`, bytes). */
export const WAL_SIZE_LIMIT = 64 * 1024 * 1024;

export interface CheckpointOptions {
  /** The WAL's size (bytes) from which the thread starts; looked at every `everyMs`. */
  startBytes?: number;
  /** How often the thread checkpoints (a checkpoint with nothing to copy costs next to nothing). */
  everyMs?: number;
}

/** The thread's code: CommonJS, evaluated (no file of its own to find under dist/ or tsx). */
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('journal_size_limit = ' + workerData.sizeLimit);
const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)');
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

export class Checkpoints {
  private worker: Worker | undefined;
  private failed = false;
  private readonly timer: NodeJS.Timeout;
  private readonly startBytes: number;
  private readonly everyMs: number;

  constructor(
    private readonly sqlite: BetterSqlite3.Database,
    private readonly file: string,
    o: CheckpointOptions = {},
  ) {
    this.startBytes = o.startBytes ?? 4 * 1024 * 1024;
    this.everyMs = o.everyMs ?? 250;
    sqlite.pragma('wal_autocheckpoint = 0');
    sqlite.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT}`);
    this.timer = setInterval(() => this.look(), this.everyMs);
    this.timer.unref();
  }

  /** Whether the thread runs (for tests). */
  get threaded(): boolean {
    return this.worker !== undefined;
  }

  private look(): void {
    if (this.worker || this.failed) return;
    let size = 0;
    try {
      size = statSync(`${this.file}-wal`).size;
    } catch {
      return; // no WAL file yet
    }
    if (size >= this.startBytes) this.start();
  }

  private start(): void {
    clearInterval(this.timer);
    const worker = new Worker(THREAD, {
      eval: true,
      workerData: {
        module: createRequire(import.meta.url).resolve('better-sqlite3'),
        file: this.file,
        everyMs: this.everyMs,
        sizeLimit: WAL_SIZE_LIMIT,
      },
    });
    worker.unref();
    const fail = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failed = true;
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
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref(); // the wait for its end keeps the process alive
    worker.postMessage('stop');
    await exited;
  }
}
