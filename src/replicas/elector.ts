/**
 * Leader election on a lease row (store/queries/lease.ts), as River and Oban do it on PostgreSQL:
 * every replica tries to take the lease when it has expired; the leader renews it every
 * `renewMs`; a lease lasts `leaseMs` on the database's clock. The term grows at every election
 * and fences the leader's writes (a transaction of a deposed leader fails its term check).
 *
 * A leader trusts its lease only until `leaseMs − margin` after its last successful renewal
 * *started* (measured on its own monotonic clock): if it could not renew by then, it steps down
 * before the lease can expire in the database, so two leaders never act at once. A leader that
 * shuts down gives the lease up and says so on the bus, so a follower takes over at once.
 */
import { randomBytes } from 'node:crypto';
import type { PgBus } from '../store/pg-bus.js';
import { notify } from '../store/pg-bus.js';
import { acquireLease, readLease, releaseLease, renewLease } from '../store/queries/lease.js';
import type { Db } from '../store/store.js';
import { LEADERSHIP, type LeadershipMessage } from './messages.js';

export type Role = 'leader' | 'follower';

export interface ElectorOptions {
  db: Db;
  bus: PgBus;
  /** Where this replica serves the API (known once it listens). */
  url: () => string;
  leaseMs: number;
  renewMs: number;
  /** This replica now leads in `term`: build and start the controller. */
  elected(term: number): Promise<void>;
  /** This replica no longer leads: stop acting at once. */
  deposed(reason: string): Promise<void>;
  onError(err: unknown, what: string): void;
}

export class Elector {
  /** This replica's identity in the lease row: unique per process. */
  readonly id = `${process.pid}-${randomBytes(4).toString('hex')}`;
  role: Role = 'follower';
  term = 0;
  /** The leader's API, as of the last look at the lease. */
  leaderUrl: string | undefined;
  private validUntil = 0;
  private timer: NodeJS.Timeout | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  /** The transitions (elected, deposed), run one after the other. */
  private changing: Promise<void> = Promise.resolve();

  constructor(private readonly o: ElectorOptions) {}

  async start(): Promise<void> {
    await this.o.bus.subscribe(LEADERSHIP, (m) => {
      const msg = m as LeadershipMessage;
      if (msg.kind === 'resigned' && this.role === 'follower') this.tickSoon();
      if (msg.kind === 'elected' && msg.holder !== this.id) this.leaderUrl = msg.url;
    });
    await this.tick();
    // Elected at once (the first replica, or the lease was free): lead before serving.
    await this.changing;
    this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    // Jitter, so that replicas started together do not all try at the same instant.
    const delay = this.o.renewMs * (0.9 + Math.random() * 0.2);
    this.timer = setTimeout(() => {
      void this.tick().finally(() => this.schedule());
    }, delay);
    this.timer.unref();
  }

  private tickSoon(): void {
    setImmediate(() => void this.tick());
  }

  /** One attempt: renew if leading, else try to take the lease. */
  tick(): Promise<void> {
    return (this.ticking ??= this.attempt().finally(() => (this.ticking = undefined)));
  }

  private async attempt(): Promise<void> {
    if (this.stopped) return;
    const started = performance.now();
    try {
      if (this.role === 'leader') {
        if (await renewLease(this.o.db, this.id, this.term, this.o.leaseMs)) this.trustUntil(started);
        else this.stepDown('the lease was lost');
        return;
      }
      const term = await acquireLease(this.o.db, this.id, this.o.url(), this.o.leaseMs);
      if (term === undefined) {
        const lease = await readLease(this.o.db);
        // Its own lease, not yet expired after a step-down, names no leader.
        const held = lease && lease.expiresAt >= lease.now && lease.holder !== this.id;
        this.leaderUrl = held ? lease.url : undefined;
        this.term = lease?.term ?? this.term;
        return;
      }
      this.role = 'leader';
      this.term = term;
      this.leaderUrl = this.o.url();
      this.trustUntil(started);
      // Not awaited: the rebuild may take a while, and renewals must go on meanwhile. A step-down
      // waits for it (see stepDown).
      this.changing = this.changing
        .then(() => this.o.elected(term))
        .catch((e: unknown) => {
          this.o.onError(e, `taking the lead in term ${term}`);
          this.stepDown('could not start leading');
        });
      const msg: LeadershipMessage = { kind: 'elected', term, url: this.o.url(), holder: this.id };
      await notify(this.o.db, LEADERSHIP, [msg]).catch((e: unknown) =>
        this.o.onError(e, 'announcing the lead'),
      );
    } catch (e) {
      this.o.onError(e, this.role === 'leader' ? 'renewing the lease' : 'trying to take the lease');
    }
  }

  private trustUntil(started: number): void {
    const margin = Math.min(this.o.renewMs, this.o.leaseMs / 5);
    this.validUntil = started + this.o.leaseMs - margin;
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => {
      if (this.role === 'leader' && performance.now() >= this.validUntil)
        this.stepDown(`could not renew the lease within ${Math.round((this.o.leaseMs - margin) / 1000)}s`);
    }, this.validUntil - performance.now());
    this.watchdog.unref();
  }

  /** Whether this replica may act as the leader right now (its lease trusted). */
  get leading(): boolean {
    return this.role === 'leader' && performance.now() < this.validUntil;
  }

  /**
   * Stops acting as leader at once (a lost lease, a refused write, a missed renewal). With
   * `release`, also gives the lease up once stopped, so that an election (maybe won by this
   * replica again, with a fresh controller) follows at once rather than at its expiry.
   */
  stepDown(reason: string, release = false): void {
    if (this.role !== 'leader') return;
    const term = this.term;
    this.role = 'follower';
    this.leaderUrl = undefined;
    clearTimeout(this.watchdog);
    const previous = this.changing;
    this.changing = previous
      .then(() => this.o.deposed(reason))
      .then(async () => {
        if (release) await releaseLease(this.o.db, this.id, term);
        // At once rather than at the next renewal: the election, or a look at who leads now
        // (a follower that does not know the leader answers the leader's routes with 503).
        this.tickSoon();
      })
      .catch((e: unknown) => this.o.onError(e, 'stepping down'));
  }

  /**
   * Shutdown: a leader stops acting, then gives the lease up so that another takes over now. It
   * leads until its controller has stopped: the work that stop waits for (a creation under way)
   * records its end under the lease it began under, where a deposed leader's writes are refused.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    await this.ticking;
    if (this.role !== 'leader') return;
    const term = this.term;
    await this.changing;
    await this.o.deposed('shutting down');
    this.role = 'follower';
    try {
      await releaseLease(this.o.db, this.id, term);
      const msg: LeadershipMessage = { kind: 'resigned', term, url: this.o.url(), holder: this.id };
      await notify(this.o.db, LEADERSHIP, [msg]);
    } catch (e) {
      this.o.onError(e, 'giving the lease up');
    }
  }
}
