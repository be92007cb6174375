/**
 * Recently seen user tokens, so that a busy client is not looked up in the store on every
 * request. Entries live a few seconds; deleting a user drops its entries at once. Job tokens are
 * never cached: they must die the moment their job ends.
 */
import type { Principal } from '../domain/user.js';

const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

export class TokenCache {
  private readonly entries = new Map<string, { principal: Principal; until: number }>();

  get(hash: string, now: number): Principal | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    if (e.until > now) return e.principal;
    this.entries.delete(hash);
    return undefined;
  }

  set(hash: string, principal: Principal, now: number): void {
    if (principal.kind !== 'user') return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(hash, { principal, until: now + TTL_MS });
  }

  forgetUser(userId: number): void {
    for (const [hash, e] of this.entries) {
      if (e.principal.kind === 'user' && e.principal.user.id === userId) this.entries.delete(hash);
    }
  }
}
