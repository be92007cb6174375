/**
 * The live streams of every open dashboard tab. One subscription to the change feed fans job
 * notices out to the streams whose caller may see that project; one timer checks the figures at
 * most every FIGURES_MS and sends them only when they changed; one timer pings every stream.
 * Nothing runs while no stream is open.
 */
import type { Principal } from '../domain/user.js';
import type { ChangeNotice } from '../service/live/change-feed.js';
import type { ServiceContext } from '../service/context.js';
import { LiveFigures } from '../service/live/figures.js';
import { visibleProjectNames } from '../service/tenancy/projects.js';
import type { SseConnection } from './sse.js';
import { StreamOutbox, type JobNotice } from './stream-outbox.js';

/** How long job notices gather before they go out, so a burst of changes is one refresh. */
const COALESCE_MS = 100;
const FIGURES_MS = 250;
const PING_MS = 15_000;

/** One open stream: what its caller may see, and what waits to go out to it. */
class StreamSession {
  private readonly outbox = new StreamOutbox();
  private timer: NodeJS.Timeout | undefined;
  private waitingForDrain = false;

  constructor(
    readonly conn: SseConnection,
    readonly principal: Principal,
    public visible: Set<string> | 'all',
  ) {}

  offerJob(n: JobNotice): void {
    if (this.visible !== 'all' && !this.visible.has(n.project)) return;
    this.outbox.addJob(n);
    this.schedule(COALESCE_MS);
  }

  offerFigures(json: string): void {
    this.outbox.setFigures(json);
    this.schedule(0);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.conn.end();
  }

  private schedule(ms: number): void {
    if (this.timer || this.waitingForDrain || this.conn.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush();
    }, ms);
  }

  /** Sends what waits, unless the socket is backed up: then it waits (coalescing) for a drain. */
  private flush(): void {
    if (this.conn.closed || this.outbox.empty) return;
    if (!this.conn.writable) {
      this.waitingForDrain = true;
      void this.conn.drained().then(() => {
        this.waitingForDrain = false;
        this.flush();
      });
      return;
    }
    const { figures, jobs } = this.outbox.take();
    if (figures !== undefined) this.conn.send('figures', figures);
    for (const j of jobs) this.conn.send('job', JSON.stringify(j));
  }
}

export class StreamHub {
  private readonly sessions = new Set<StreamSession>();
  private readonly figures: LiveFigures;
  private lastFigures: string | undefined;
  private unsubscribe: (() => void) | undefined;
  private figuresTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.figures = new LiveFigures(ctx);
  }

  /** Registers an open stream and sends it the current figures; it leaves when it closes. */
  async add(conn: SseConnection, principal: Principal): Promise<void> {
    const visible = await visibleProjectNames(this.ctx, principal);
    // Listen before reading the queues, so a queue changed during the read is not missed.
    if (!this.unsubscribe) this.startShared();
    try {
      await this.figures.load();
    } finally {
      if (conn.closed && this.sessions.size === 0) this.stopShared();
    }
    if (conn.closed) return;
    const session = new StreamSession(conn, principal, visible);
    this.sessions.add(session);
    conn.onClose(() => this.remove(session));
    session.offerFigures(this.currentFigures());
  }

  /** Ends every stream (the server is closing). */
  closeAll(): void {
    for (const s of [...this.sessions]) s.stop();
  }

  private remove(session: StreamSession): void {
    session.stop();
    this.sessions.delete(session);
    if (this.sessions.size === 0) this.stopShared();
  }

  private startShared(): void {
    this.unsubscribe = this.ctx.changes?.subscribe((n) => this.onNotice(n));
    this.figuresTimer = setInterval(() => this.checkFigures(), FIGURES_MS).unref();
    this.pingTimer = setInterval(() => {
      for (const s of this.sessions) if (s.conn.writable) s.conn.comment('ping');
    }, PING_MS).unref();
  }

  private stopShared(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.figuresTimer);
    clearInterval(this.pingTimer);
    this.lastFigures = undefined;
    // Nobody hears about queue changes now: the cached definitions would go stale.
    this.figures.forget();
  }

  private onNotice(n: ChangeNotice): void {
    switch (n.kind) {
      case 'job': {
        const notice: JobNotice = { id: n.id, project: n.project, state: n.state, reason: n.reason };
        for (const s of this.sessions) s.offerJob(notice);
        return;
      }
      case 'queue':
        this.figures
          .queueChanged(n.name)
          .then(() => this.checkFigures())
          .catch((e: unknown) => this.onError(e, `live figures: queue ${n.name}`));
        return;
      case 'project':
        this.reloadVisibility();
        return;
      case 'user-deleted':
        // Its token no longer opens anything: neither may a stream it opened before.
        for (const s of [...this.sessions])
          if (s.principal.kind === 'user' && s.principal.user.name === n.name) this.remove(s);
        return;
    }
  }

  /** Memberships may have changed: every caller that is not an admin reads its projects again. */
  private reloadVisibility(): void {
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = (async () => {
      do {
        this.reloadAgain = false;
        for (const s of this.sessions) {
          if (s.visible !== 'all') s.visible = await visibleProjectNames(this.ctx, s.principal);
        }
      } while (this.reloadAgain);
    })()
      .catch((e: unknown) => this.onError(e, 'live stream: project visibility'))
      .finally(() => {
        this.reloading = undefined;
      });
  }

  private currentFigures(): string {
    return (this.lastFigures ??= JSON.stringify(this.figures.snapshot()));
  }

  private checkFigures(): void {
    if (this.sessions.size === 0) return;
    const json = JSON.stringify(this.figures.snapshot());
    if (json === this.lastFigures) return;
    this.lastFigures = json;
    for (const s of this.sessions) s.offerFigures(json);
  }
}
