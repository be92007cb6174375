/**
 * How many `berth exec` and `port-forward` sessions are open on this server, per user and in all,
 * against config `sessions` (domain/exec-protocol.ts): one more is refused, saying which bound.
 */
import type { SessionLimits } from '../domain/exec-protocol.js';

export class SessionBounds {
  private all = 0;
  private readonly perUser = new Map<string, number>();

  constructor(private readonly limits: SessionLimits) {}

  /** Why `who` may not open one more now; undefined when they may. */
  refusal(who: string): string | undefined {
    const mine = this.perUser.get(who) ?? 0;
    if (mine >= this.limits.maxPerUser)
      return `${who} has ${mine} sessions open, the most one user may (sessions.maxPerUser): close one first`;
    if (this.all >= this.limits.maxPerServer)
      return `this server has ${this.all} sessions open, the most it takes (sessions.maxPerServer): try again later`;
    return undefined;
  }

  take(who: string): void {
    this.all++;
    this.perUser.set(who, (this.perUser.get(who) ?? 0) + 1);
  }

  give(who: string): void {
    this.all--;
    const n = (this.perUser.get(who) ?? 1) - 1;
    if (n > 0) this.perUser.set(who, n);
    else this.perUser.delete(who);
  }
}
