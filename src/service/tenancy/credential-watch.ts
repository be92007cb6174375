/**
 * Ends the responses that outlive their request — server-sent-event streams, followed logs — once
 * the token that opened them stops working: revoked, expired, its user deleted. A token is
 * checked when a request comes, and these never come again.
 *
 * An expiry is a timer. A revocation or a deletion is a notice on the change feed (which crosses
 * replicas): that user's watched tokens are looked up again at once. Project tokens die with their
 * resource instance and no notice says so, so every watched token is also looked up again every
 * RECHECK_MS — one query per open stream, at most twice a minute.
 */
import { hashToken } from '../../domain/tokens.js';
import type { Principal } from '../../domain/user.js';
import { findToken } from '../../store/queries/tokens.js';
import type { ServiceContext } from '../context.js';

const RECHECK_MS = 30_000;
/** setTimeout's longest delay: a later expiry is reached in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

interface Watched {
  hash: string;
  /** The user whose notices concern it; none for job and project tokens. */
  user?: string;
  end: () => void;
  timer?: NodeJS.Timeout;
}

export class CredentialWatch {
  private readonly watched = new Set<Watched>();
  private recheckTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly onError: (err: unknown) => void,
  ) {}

  /**
   * Calls `end` once the bearer `token` (which authenticated `p`) stops working. Returns the
   * watch's stop: call it when the response ends by itself.
   */
  async watch(token: string, p: Principal, end: () => void): Promise<() => void> {
    const hash = hashToken(token);
    const w: Watched = { hash, end, ...(p.kind === 'user' ? { user: p.user.name } : {}) };
    const found = await findToken(this.ctx.store.db, hash);
    if (!found || expired(found.expiresAt, this.ctx.now())) {
      end(); // revoked or expired while the request was being served
      return () => {};
    }
    this.add(w);
    this.expireAt(w, found.expiresAt);
    return () => this.remove(w);
  }

  /** Stops watching (the server is closing; its streams are ended by their own hooks). */
  close(): void {
    for (const w of [...this.watched]) this.remove(w);
  }

  private add(w: Watched): void {
    this.watched.add(w);
    if (this.watched.size > 1) return;
    this.unsubscribe = this.ctx.changes?.subscribe((n) => {
      if (n.kind === 'token-revoked' || n.kind === 'user-deleted') this.recheck((x) => x.user === n.name);
    });
    this.recheckTimer = setInterval(() => this.recheck(() => true), RECHECK_MS);
    this.recheckTimer.unref();
  }

  private remove(w: Watched): void {
    if (!this.watched.delete(w)) return;
    clearTimeout(w.timer);
    if (this.watched.size > 0) return;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    clearInterval(this.recheckTimer);
  }

  /** Ends what `w` watches: its token no longer works. */
  private fire(w: Watched): void {
    if (!this.watched.has(w)) return;
    this.remove(w);
    w.end();
  }

  private expireAt(w: Watched, at: number | null): void {
    if (at === null) return;
    const ms = at - this.ctx.now();
    w.timer =
      ms > MAX_TIMER_MS
        ? setTimeout(() => this.expireAt(w, at), MAX_TIMER_MS)
        : setTimeout(() => this.fire(w), Math.max(0, ms));
    w.timer.unref();
  }

  /** Looks the tokens `which` picks up again, ending what those that no longer work opened. */
  private recheck(which: (w: Watched) => boolean): void {
    for (const w of [...this.watched].filter(which)) {
      findToken(this.ctx.store.db, w.hash).then((found) => {
        if (!found || expired(found.expiresAt, this.ctx.now())) this.fire(w);
      }, this.onError);
    }
  }
}

const expired = (expiresAt: number | null, now: number): boolean => expiresAt !== null && expiresAt <= now;
