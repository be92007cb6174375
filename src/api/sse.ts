/**
 * One server-sent-events response (`text/event-stream`) on a raw HTTP response. Every event is
 * one write of a whole frame, so frames of different producers never interleave. Producers
 * check `writable` and wait for `drained()` rather than pile frames up in memory.
 */
import type { ServerResponse } from 'node:http';

export class SseConnection {
  private ended = false;
  private readonly closeHandlers = new Set<() => void>();

  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      // nginx and its kin buffer responses unless told not to; a stream must go out as written.
      'x-accel-buffering': 'no',
    });
    res.on('close', () => this.finish());
  }

  get closed(): boolean {
    return this.ended;
  }

  /** Whether a frame written now goes straight out instead of queueing behind a full socket. */
  get writable(): boolean {
    return !this.ended && !this.res.writableNeedDrain;
  }

  /** Sends an event; `data` is one line (JSON has no raw newlines). */
  send(event: string, data: string): void {
    if (!this.ended) this.res.write(`event: ${event}\ndata: ${data}\n\n`);
  }

  /** A comment line: ignored by clients, but keeps proxies and idle timers from closing us. */
  comment(text: string): void {
    if (!this.ended) this.res.write(`: ${text}\n\n`);
  }

  /** Resolves once the socket has room again, or the connection has closed. */
  drained(): Promise<void> {
    if (this.writable || this.ended) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.closeHandlers.delete(done);
        resolve();
      };
      this.res.once('drain', done);
      this.closeHandlers.add(done);
    });
  }

  onClose(fn: () => void): void {
    if (this.ended) fn();
    else this.closeHandlers.add(fn);
  }

  end(): void {
    if (this.ended) return;
    this.res.end();
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    const handlers = [...this.closeHandlers];
    this.closeHandlers.clear();
    for (const fn of handlers) fn();
  }
}
