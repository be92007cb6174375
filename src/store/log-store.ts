/**
 * Job output, appended in the order the agent uploads it, read whole or followed live. On SQLite
 * a file per job under DATA/logs (`FileLogStore`); on PostgreSQL a table every replica reads
 * (`PgLogStore`, pg-log-store.ts).
 */
import { EventEmitter } from 'node:events';
import { createReadStream, mkdirSync, statSync } from 'node:fs';
import { appendFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';

/**
 * A part of a job's log between two marks (`mark`): what came after `after`, up to and including
 * `upTo` (null: to the end). One attempt's output, for a job that ran more than once.
 */
export interface LogRange {
  after: number;
  upTo: number | null;
}

export interface LogStore {
  append(jobId: number, text: string): Promise<void>;
  /** Where the log ends now (a byte offset, or the last row's id): the bound of a LogRange. */
  mark(jobId: number): Promise<number>;
  /** Bytes of output written after mark `after` (a LogRange bound): one run's, from its start. */
  sizeAfter(jobId: number, after: number): Promise<number>;
  /** No more output will come for this job: followers finish once they have sent what there is. */
  ended(jobId: number): void;
  /** Everything written so far, or the part `range` says. */
  read(jobId: number, range?: LogRange): Readable;
  /**
   * The log from the start, then live output until the job has ended (`ended`, or `isDone()` says
   * so) and everything has been sent.
   */
  follow(jobId: number, isDone: () => boolean): Readable;
  /** Removes the logs of jobs `jobIds` (the retention sweep removes the jobs). */
  discard(jobIds: number[]): Promise<void>;
  /** The server is shutting down: every follower finishes with what it has. */
  close(): void;
}

/** How often a follower looks again when no append woke it (a missed wake costs at most this). */
export const FOLLOW_CHECK_MS = 1000;

/** A follower's sleep between reads, cut short by `wake` (an append was announced). */
export class Wakeup {
  private cut: (() => void) | undefined;

  readonly wake = (): void => this.cut?.();

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.cut = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => (this.cut = undefined));
  }
}

/** One file per job under DATA/logs, and a notification for every append. */
export class FileLogStore implements LogStore {
  private readonly emitter = new EventEmitter();
  private closed = false;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.emitter.setMaxListeners(0);
  }

  path(jobId: number): string {
    return join(this.dir, `${jobId}.log`);
  }

  async append(jobId: number, text: string): Promise<void> {
    if (!text) return;
    await appendFile(this.path(jobId), text);
    this.emitter.emit(String(jobId));
  }

  close(): void {
    this.closed = true;
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  ended(jobId: number): void {
    this.emitter.emit(String(jobId));
  }

  async discard(jobIds: number[]): Promise<void> {
    for (const id of jobIds) await rm(this.path(id), { force: true });
  }

  size(jobId: number): number {
    try {
      return statSync(this.path(jobId)).size;
    } catch {
      return 0;
    }
  }

  mark(jobId: number): Promise<number> {
    return Promise.resolve(this.size(jobId));
  }

  sizeAfter(jobId: number, after: number): Promise<number> {
    return Promise.resolve(Math.max(0, this.size(jobId) - after));
  }

  read(jobId: number, range?: LogRange): Readable {
    const start = range?.after ?? 0;
    const end = Math.min(this.size(jobId), range?.upTo ?? Infinity);
    return end <= start ? Readable.from([]) : createReadStream(this.path(jobId), { start, end: end - 1 });
  }

  follow(jobId: number, isDone: () => boolean): Readable {
    const path = this.path(jobId);
    let pos = 0;
    const sizeOf = () => this.size(jobId);
    return followLog(this.emitter, jobId, {
      ended: isDone,
      more: async function* () {
        const size = sizeOf();
        if (size <= pos) return;
        for await (const chunk of createReadStream(path, { start: pos, end: size - 1 }))
          yield chunk as Buffer;
        pos = size;
      },
      closed: () => this.closed,
    });
  }
}

/** Where a follower reads one job's log from. */
export interface FollowSource {
  /** Whether no more output will come. Asked before `more`, so nothing written before the end is missed. */
  ended(): boolean | Promise<boolean>;
  /** The output written since the last call (nothing when there is none). */
  more(): AsyncIterable<Buffer>;
  /** The server is shutting down. */
  closed(): boolean;
}

/**
 * The log from the start, then live output until the job has ended and everything has been sent:
 * woken by each append `emitter` announces for `jobId`, and every FOLLOW_CHECK_MS in any case.
 */
export function followLog(emitter: EventEmitter, jobId: number, src: FollowSource): Readable {
  async function* stream(): AsyncGenerator<Buffer> {
    const appended = new Wakeup();
    emitter.on(String(jobId), appended.wake);
    try {
      for (;;) {
        const done = await src.ended();
        let any = false;
        for await (const chunk of src.more()) {
          any = true;
          yield chunk;
        }
        if (any) continue;
        if (done || src.closed()) return;
        await appended.sleep(FOLLOW_CHECK_MS);
      }
    } finally {
      emitter.off(String(jobId), appended.wake);
    }
  }
  return Readable.from(stream());
}
