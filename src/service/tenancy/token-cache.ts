/**
 * Recently seen user tokens that never expire, so that a busy client is not looked up in the
 * store on every request. Entries live a few seconds; revoking a token or deleting a user drops
 * the entries it concerns at once here, and on the other replicas when the change feed brings the
 * notice (follow()). Job tokens are never cached: they must die the moment their job ends.
 *
 * It also decides when a token's use is worth recording (`last used`): at most once a minute per
 * token, so that a busy client costs no write per request.
 */
import type { Principal } from '../../domain/user.js';
import type { ChangeFeed } from '../live/change-feed.js';

const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;
/** How often a token's `last used` is written at most (per server). */
export const LAST_USED_EVERY_MS = 60_000;

export class TokenCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();
  /** When each token's use was last recorded. */
  private readonly recorded = new Map<string, number>();
  private followed: ChangeFeed | undefined;
  /**
   * Grows at every drop. A request that looked its token up while a revocation committed must not
   * cache what it read: it passes the generation it started with, and `set` refuses a stale one.
   */
  private dropped = 0;

  get generation(): number {
    return this.dropped;
  }

  get(hash: string, now: number): Principal | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (e.until > now) return e.principal;
    this.entries.delete(hash);
    return undefined;
  }

  /**
   * Caches a user's token (one that never expires: authenticate.ts), unless something was dropped
   * since `generation` (read before the token was looked up).
   */
  set(hash: string, principal: Principal, now: number, generation = this.dropped): void {
    if (principal.kind !== 'user' || generation !== this.dropped) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, { principal, until: now + TTL_MS });
  }

  forgetUser(userId: number): void {
    this.dropped++;
    for (const [hash, e] of this.entries) {
      if (e.principal.kind === 'user' && e.principal.user.id === userId) this.entries.delete(hash);
    }
  }

  private forgetUserNamed(name: string): void {
    this.dropped++;
    for (const [hash, e] of this.entries) {
      if (e.principal.kind === 'user' && e.principal.user.name === name) this.entries.delete(hash);
    }
  }

  forgetToken(hash: string): void {
    this.dropped++;
    this.entries.delete(hash);
    this.recorded.delete(hash);
  }

  /**
   * Drops what the feed says is revoked: a user's tokens when one of them is revoked or the user
   * deleted. The feed carries the notices of the other replicas too (replicas/change-relay.ts),
   * so a token revoked through one replica stops working on every other within the bus's delay.
   * Idempotent: the server's API calls it once when it is built.
   */
  follow(feed: ChangeFeed): void {
    if (this.followed === feed) return;
    this.followed = feed;
    feed.subscribe((n) => {
      if (n.kind === 'user-deleted' || n.kind === 'token-revoked') this.forgetUserNamed(n.name);
    });
  }

  /** Whether this use of the token should be recorded: the first, then once a minute. */
  shouldRecordUse(hash: string, now: number): boolean {
    const last = this.recorded.get(hash);
    if (last !== undefined && now - last < LAST_USED_EVERY_MS) return false;
    if (this.recorded.size >= MAX_ENTRIES) this.recorded.clear();
    this.recorded.set(hash, now);
    return true;
  }
}
