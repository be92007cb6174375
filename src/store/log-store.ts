/**
 * Job output, appended in the order the agent uploads it, read whole or followed live. On SQLite
 * a file per job under DATA/logs, a directory per thousand jobs (`FileLogStore`); on PostgreSQL a
 * table every replica reads (`PgLogStore`, pg-log-store.ts).
 */
import { EventEmitter } from 'node:events';
import { createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { appendFile, mkdir, opendir, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { forEachInParallel } from './parallel.js';

/**
 * A part of a job's log between two marks (`mark`): what came after `after`, up to and including
 * `upTo` (null: to the end). One attempt's output, for a job that ran more than once.
 */
export interface LogRange {
  after: number;
  upTo: number | null;
}

export interface LogStore {
  /** Appends `data` as it is: output is kept byte for byte, whatever its encoding. */
  append(jobId: number, data: Buffer): Promise<void>;
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

/** Jobs per directory of DATA/logs: job 12345's log is DATA/logs/12/12345.log. */
export const JOBS_PER_LOG_DIR = 1000;

/** Where job `jobId`'s log lives under `dir` (DATA/logs). */
export const logPath = (dir: string, jobId: number): string =>
  join(dir, String(Math.floor(jobId / JOBS_PER_LOG_DIR)), `${jobId}.log`);

const LOG_FILE = /^(\d+)\.log$/;

/**
 * Every job log under `dir`, by job id (ascending): in their directories, and any still lying in
 * `dir` itself, as berth kept them before they had directories (`shardLogs` moves those).
 */
export async function listLogFiles(dir: string): Promise<{ jobId: number; path: string }[]> {
  if (!existsSync(dir)) return [];
  const out: { jobId: number; path: string }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const flat = LOG_FILE.exec(entry.name);
    if (flat && entry.isFile()) out.push({ jobId: Number(flat[1]), path: join(dir, entry.name) });
    if (!entry.isDirectory() || !/^\d+$/.test(entry.name)) continue;
    for (const name of await readdir(join(dir, entry.name))) {
      const m = LOG_FILE.exec(name);
      if (m) out.push({ jobId: Number(m[1]), path: join(dir, entry.name, name) });
    }
  }
  return out.sort((a, b) => a.jobId - b.jobId);
}

/**
 * Moves logs kept the old way, one flat directory of files, into their directories (a rename
 * each, nothing copied), reporting every `every` files moved. Run at start, before any append.
 * Returns how many it moved.
 */
export async function shardLogs(
  dir: string,
  progress: (moved: number) => void = () => {},
  every = 10_000,
): Promise<number> {
  if (!existsSync(dir)) return 0;
  let moved = 0;
  const made = new Set<string>();
  for await (const entry of await opendir(dir)) {
    const m = LOG_FILE.exec(entry.name);
    if (!m || !entry.isFile()) continue;
    const to = logPath(dir, Number(m[1]));
    const shard = join(to, '..');
    if (!made.has(shard)) await mkdir(shard, { recursive: true, mode: 0o700 });
    made.add(shard);
    await rename(join(dir, entry.name), to);
    if (++moved % every === 0) progress(moved);
  }
  return moved;
}

/** Files removed at once by `discard` (16: 1,000 removals then hold the event loop 4 ms at most, against 40–75 ms all at once). */
const FILES_IN_FLIGHT = 16;

/** One file per job under DATA/logs (a directory per thousand jobs), and a notification for every append. */
export class FileLogStore implements LogStore {
  private readonly emitter = new EventEmitter();
  private closed = false;
  /** The directories made (or found) so far. */
  private readonly shards = new Set<number>();

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.emitter.setMaxListeners(0);
  }

  path(jobId: number): string {
    return logPath(this.dir, jobId);
  }

  async append(jobId: number, data: Buffer): Promise<void> {
    if (data.length === 0) return;
    const shard = Math.floor(jobId / JOBS_PER_LOG_DIR);
    if (!this.shards.has(shard)) {
      await mkdir(join(this.dir, String(shard)), { recursive: true, mode: 0o700 });
      this.shards.add(shard);
    }
    try {
      await appendFile(this.path(jobId), data);
    } catch (e) {
      // Its directory was removed, emptied by the retention sweep (`discard`) since it was made.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      await mkdir(join(this.dir, String(shard)), { recursive: true, mode: 0o700 });
      await appendFile(this.path(jobId), data);
    }
    this.emitter.emit(String(jobId));
  }

  close(): void {
    this.closed = true;
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  ended(jobId: number): void {
    this.emitter.emit(String(jobId));
  }

  /**
   * A few files at a time (parallel.ts), each one unlink: a job without output has no file. Then
   * the directories this left empty go too — a sweep through years of history would otherwise
   * leave one empty directory per thousand jobs; `rmdir` removes only an empty one.
   */
  async discard(jobIds: number[]): Promise<void> {
    await forEachInParallel(jobIds, FILES_IN_FLIGHT, (id) =>
      unlink(this.path(id)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      }),
    );
    for (const shard of new Set(jobIds.map((id) => Math.floor(id / JOBS_PER_LOG_DIR)))) {
      try {
        await rmdir(join(this.dir, String(shard)));
        this.shards.delete(shard);
      } catch (e) {
        if (!['ENOTEMPTY', 'EEXIST', 'ENOENT'].includes((e as NodeJS.ErrnoException).code ?? '')) throw e;
      }
    }
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
