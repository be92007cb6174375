/**
 * Batches a job's output and uploads it in order, one request at a time: small writes within a
 * few milliseconds share a request, and a large burst is cut into pieces of 256 Ki characters.
 */
import type { AgentClient } from './client.js';

const MAX_BATCH = 256 * 1024;
const LINGER_MS = 20;

export class LogUploader {
  private pending: string[] = [];
  private pendingBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private failure: Error | undefined;

  constructor(private readonly client: AgentClient) {}

  /** `text` is already decoded (per stream, so no UTF-8 sequence is ever split). */
  write(chunk: string): void {
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= MAX_BATCH) this.flushSoon(0);
    else this.flushSoon(LINGER_MS);
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
    const data = this.pending.join('');
    this.pending = [];
    this.pendingBytes = 0;
    this.chain = this.chain.then(async () => {
      if (this.failure) return;
      for (let at = 0; at < data.length; at += MAX_BATCH) {
        try {
          await this.client.post('/logs', data.slice(at, at + MAX_BATCH), 'text/plain; charset=utf-8');
        } catch (e) {
          this.failure = e instanceof Error ? e : new Error('log upload failed', { cause: e });
          return;
        }
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
