/**
 * The one push stream of this tab: `GET /api/v1/stream` as server-sent events, read with fetch
 * and a ReadableStream (EventSource cannot send the Authorization header). While a job page is
 * open the stream is reopened with `?job=ID`, so that job's log comes through the same stream:
 * there is never more than one connection. It reconnects with backoff, and after a lost
 * connection tells its listeners to catch up (`resync`).
 */
import { API, errorOf, unauthorized } from './api.js';
import type { Figures, StreamEvents } from './types.js';

export type StreamStatus = 'connecting' | 'live' | 'offline';

/** What listeners get besides the server's events. */
export interface LocalEvents {
  /** A connection is open (after its `hello`); `job` is the job whose log it carries. */
  open: { job: number | null; resync: boolean };
}

type AllEvents = StreamEvents & LocalEvents;
type Listener<K extends keyof AllEvents> = (data: AllEvents[K]) => void;

/** No byte for this long (the server pings every 15 s) means the connection is dead. */
const SILENCE_MS = 45_000;
const BACKOFF_MIN_MS = 1_000;
const BACKOFF_MAX_MS = 30_000;

/** A minimal parser of the `text/event-stream` format (whatwg HTML, "server-sent events"). */
export class SseParser {
  private buffer = '';
  private event = '';
  private data: string[] = [];

  constructor(private readonly dispatch: (event: string, data: string) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (!m) break;
      // A lone \r at the very end might be the first half of \r\n: wait for the next chunk.
      if (m[0] === '\r' && m.index === this.buffer.length - 1) break;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.dispatch(this.event || 'message', this.data.join('\n'));
      this.event = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return; // a comment: the server's ping
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

class EventStream {
  private token: string | null = null;
  private job: number | null = null;
  private abort: AbortController | null = null;
  private retryTimer: number | undefined;
  private silenceTimer: number | undefined;
  private switchTimer: number | undefined;
  private attempt = 0;
  /** Whether the last connection ended by itself (so the next one must catch up). */
  private lost = false;
  private readonly listeners = new Map<keyof AllEvents, Set<(data: never) => void>>();
  private readonly statusListeners = new Set<() => void>();
  private statusValue: StreamStatus = 'connecting';
  /** The latest `figures`, so a page opened later starts from them. */
  figures: Figures | null = null;

  status = (): StreamStatus => this.statusValue;

  onStatus = (fn: () => void): (() => void) => {
    this.statusListeners.add(fn);
    return () => this.statusListeners.delete(fn);
  };

  on<K extends keyof AllEvents>(event: K, fn: Listener<K>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  private emit<K extends keyof AllEvents>(event: K, data: AllEvents[K]): void {
    for (const fn of this.listeners.get(event) ?? []) {
      try {
        (fn as Listener<K>)(data);
      } catch (e) {
        // One listener's bug must not stop the others, nor the stream.
        setTimeout(() => {
          throw e;
        });
      }
    }
  }

  private setStatus(s: StreamStatus): void {
    if (s === this.statusValue) return;
    this.statusValue = s;
    for (const fn of this.statusListeners) fn();
  }

  start(token: string): void {
    if (this.token === token && this.abort) return;
    this.stop();
    this.token = token;
    this.attempt = 0;
    this.lost = false;
    this.connect();
  }

  stop(): void {
    this.token = null;
    this.figures = null;
    this.disconnect();
    window.clearTimeout(this.retryTimer);
    window.clearTimeout(this.switchTimer);
    this.setStatus('connecting');
  }

  /**
   * Follows `id`'s log (null: none), on a new connection so the log starts from its beginning.
   * Coalesced over a tick, so leaving one job page for another (or React's development double
   * mount) reconnects once.
   */
  setJob(id: number | null): void {
    this.job = id;
    if (id !== null) this.freshLog = true;
    window.clearTimeout(this.switchTimer);
    this.switchTimer = window.setTimeout(() => {
      const fresh = this.freshLog;
      this.freshLog = false;
      if (!this.token) return;
      if (this.job === this.connectedJob && !(fresh && this.job !== null)) return;
      this.disconnect();
      window.clearTimeout(this.retryTimer);
      this.attempt = 0;
      this.connect();
    }, 0);
  }

  private freshLog = false;
  private connectedJob: number | null = null;

  private disconnect(): void {
    window.clearTimeout(this.silenceTimer);
    const a = this.abort;
    this.abort = null;
    a?.abort();
  }

  private connect(): void {
    const token = this.token;
    if (!token) return;
    const abort = new AbortController();
    this.abort = abort;
    const job = this.job;
    this.connectedJob = job;
    this.setStatus('connecting');
    void this.run(token, job, abort).then(
      (why) => this.ended(abort, why),
      () => this.ended(abort, 'error'),
    );
  }

  private ended(abort: AbortController, why: 'error' | 'closed' | 'unauthorized'): void {
    if (this.abort !== abort) return; // replaced on purpose
    this.abort = null;
    window.clearTimeout(this.silenceTimer);
    if (why === 'unauthorized') return;
    this.lost = true;
    this.setStatus('offline');
    const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.attempt);
    this.attempt++;
    window.clearTimeout(this.retryTimer);
    this.retryTimer = window.setTimeout(() => this.connect(), delay * (0.75 + Math.random() * 0.5));
  }

  private async run(
    token: string,
    job: number | null,
    abort: AbortController,
  ): Promise<'error' | 'closed' | 'unauthorized'> {
    const watchdog = () => {
      window.clearTimeout(this.silenceTimer);
      this.silenceTimer = window.setTimeout(() => abort.abort(), SILENCE_MS);
    };
    watchdog();
    let res: Response;
    try {
      res = await fetch(API + '/stream' + (job === null ? '' : `?job=${job}`), {
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
        cache: 'no-store',
        signal: abort.signal,
      });
    } catch {
      return 'error';
    }
    if (res.status === 401) {
      unauthorized((await errorOf(res)).message);
      return 'unauthorized';
    }
    if (res.status === 404 && job !== null) {
      // That job is not (or no longer) the caller's to see: carry on without its log.
      await res.body?.cancel().catch(() => undefined);
      if (this.job === job) this.job = null;
      return 'error';
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return 'error';
    }
    const parser = new SseParser((event, data) => {
      if (this.abort !== abort) return;
      this.dispatch(event, data, job);
    });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return 'closed';
        watchdog();
        parser.push(value);
      }
    } catch {
      return 'error';
    } finally {
      reader.releaseLock();
    }
  }

  private dispatch(event: string, text: string, job: number | null): void {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return;
    }
    switch (event) {
      case 'hello': {
        this.attempt = 0;
        const resync = this.lost;
        this.lost = false;
        this.setStatus('live');
        this.emit('hello', data as StreamEvents['hello']);
        this.emit('open', { job, resync });
        return;
      }
      case 'figures':
        this.figures = data as Figures;
        this.emit('figures', this.figures);
        return;
      case 'job':
      case 'log':
      case 'log-end':
        this.emit(event, data as never);
        return;
      default:
        return; // an event this version does not know
    }
  }
}

/** The tab's stream. */
export const stream = new EventStream();
