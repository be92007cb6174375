/**
 * Batches a job's output and uploads it in order, one request at a time: small writes within a
 * few milliseconds share a request, and a large burst is cut into pieces of 256 KiB. Output is
 * bytes, sent as written (application/octet-stream): nothing decodes it on the way, so a log that
 * is not UTF-8 comes back as it was. What waits to be sent is bounded (BACKLOG): past it, `write`
 * says so and the caller stops reading the job's output until `drained` — a job whose uploads the
 * server holds back (its rate limit) then blocks on its own full pipe, not on the agent's memory.
 */
import type { AgentClient } from './client.js';

const MAX_BATCH = 256 * 1024;
const LINGER_MS = 20;
/** Bytes written and not yet uploaded past which the writer should wait. */
export const BACKLOG = 8 * 1024 * 1024;

export class LogUploader {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | undefined;
  /** Bytes written and not yet uploaded (pending or in the chain). */
  private backlog = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly client: AgentClient) {}

  /** Queues `chunk`; false when the backlog is past BACKLOG (wait for `drained` before more). */
  write(chunk: Buffer | string): boolean {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (data.length > 0) {
      this.pending.push(data);
      this.pendingBytes += data.length;
      this.backlog += data.length;
      if (this.pendingBytes >= MAX_BATCH) this.flushSoon(0);
      else this.flushSoon(LINGER_MS);
    }
    return this.backlog < BACKLOG;
  }

  /** Resolves once the backlog is under BACKLOG (or an upload failed for good: nothing waits then). */
  drained(): Promise<void> {
    if (this.backlog < BACKLOG || this.failure) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private sent(bytes: number): void {
    this.backlog -= bytes;
    if (this.backlog >= BACKLOG && !this.failure) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private flushSoon(ms: number): void {
    if (ms === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.enqueueUpload();
    } else {
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        this.enqueueUpload();
      }, ms);
    }
  }

  private enqueueUpload(): void {
    if (this.pendingBytes === 0) return;
    const data = Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.chain = this.chain.then(async () => {
      try {
        if (this.failure) return;
        for (let at = 0; at < data.length; at += MAX_BATCH) {
          try {
            await this.client.post('/logs', data.subarray(at, at + MAX_BATCH), 'application/octet-stream');
          } catch (e) {
            this.failure = e instanceof Error ? e : new Error('log upload failed', { cause: e });
            return;
          }
        }
      } finally {
        this.sent(data.length);
      }
    });
  }

  /** Uploads everything written so far; rejects if an upload failed for good. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.enqueueUpload();
    await this.chain;
    if (this.failure) throw this.failure;
  }
}
