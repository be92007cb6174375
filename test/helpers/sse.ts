/** `GET /api/v1/stream` read the way the dashboard reads it, for tests. */
import { waitFor } from './wait.js';

export interface SseEvent {
  event: string;
  data: unknown;
}

/** A stream read the way the dashboard reads it: fetch with the token, events parsed as they come. */
export class Stream {
  readonly events: SseEvent[] = [];
  comments = 0;
  ended = false;
  private readonly abort = new AbortController();

  private constructor(readonly res: Response) {}

  static async open(api: string, token: string, query = ''): Promise<Stream> {
    const abort = new AbortController();
    const res = await fetch(`${api}/stream${query}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: abort.signal,
    });
    const s = new Stream(res);
    s.abort.signal.addEventListener('abort', () => abort.abort());
    if (res.ok && res.body) void s.read(res.body);
    return s;
  }

  private async read(body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (frame.startsWith(':')) {
            this.comments++;
            continue;
          }
          const event = /^event: (.*)$/m.exec(frame)?.[1] ?? 'message';
          const data = /^data: (.*)$/m.exec(frame)?.[1] ?? '';
          this.events.push({ event, data: JSON.parse(data) as unknown });
        }
      }
    } catch {
      // aborted
    }
    this.ended = true;
  }

  of<T>(event: string): T[] {
    return this.events.filter((e) => e.event === event).map((e) => e.data as T);
  }

  /** Waits until an `event` whose data satisfies `test` has arrived. */
  next<T>(event: string, what: string, test: (data: T) => boolean = () => true): Promise<T> {
    return waitFor(what, () => this.of<T>(event).find(test));
  }

  close(): void {
    this.abort.abort();
  }
}
