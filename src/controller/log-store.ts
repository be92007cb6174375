/**
 * Job output: one file per job under DATA/logs, appended in the order the agent uploads it, and
 * a notification for every append so followers stream it live.
 */
import { EventEmitter } from 'node:events';
import { createReadStream, mkdirSync, statSync } from 'node:fs';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';

export class LogStore {
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

  /** The server is shutting down: every follower finishes with what it has. */
  close(): void {
    this.closed = true;
    for (const name of this.emitter.eventNames()) this.emitter.emit(name);
  }

  /** No more output will come for this job: followers finish. */
  ended(jobId: number): void {
    this.emitter.emit(String(jobId));
  }

  size(jobId: number): number {
    try {
      return statSync(this.path(jobId)).size;
    } catch {
      return 0;
    }
  }

  /** Everything written so far. */
  read(jobId: number): Readable {
    return this.size(jobId) === 0 ? Readable.from([]) : createReadStream(this.path(jobId));
  }

  /**
   * The log from the start, then live output until `isDone()` says the job ended and everything
   * has been sent. Wakes on each append; a periodic check covers a missed wake.
   */
  follow(jobId: number, isDone: () => boolean): Readable {
    const emitter = this.emitter;
    const path = this.path(jobId);
    const sizeOf = () => this.size(jobId);
    const closed = () => this.closed;
    async function* stream(): AsyncGenerator<Buffer> {
      let pos = 0;
      let wake: (() => void) | undefined;
      const onAppend = () => wake?.();
      emitter.on(String(jobId), onAppend);
      try {
        for (;;) {
          const done = isDone(); // read before the size, so no output written before "done" is missed
          const size = sizeOf();
          if (size > pos) {
            for await (const chunk of createReadStream(path, { start: pos, end: size - 1 })) {
              yield chunk as Buffer;
            }
            pos = size;
            continue;
          }
          if (done || closed()) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 1000);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          wake = undefined;
        }
      } finally {
        emitter.off(String(jobId), onAppend);
      }
    }
    return Readable.from(stream());
  }
}
