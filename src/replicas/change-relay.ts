/**
 * Carries the change feed between replicas, so every replica's live streams see every change:
 * what this replica publishes goes out on the bus (the notices of one turn of the event loop in
 * one notification), and what the others publish comes in and is published here. A notice is
 * small (which job or queue changed, not its new state), and readers fetch what they show.
 */
import type { ChangeFeed, ChangeNotice } from '../service/live/change-feed.js';
import type { PgBus } from '../store/pg-bus.js';
import { notify } from '../store/pg-bus.js';
import type { Db } from '../store/store.js';
import { CHANGES, type RelayedNotice } from './messages.js';

export class ChangeRelay {
  private outgoing: RelayedNotice[] = [];
  /** Notices that came in over the bus: published here, never sent out again. */
  private readonly incoming = new WeakSet<ChangeNotice>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly db: Db,
    private readonly feed: ChangeFeed,
    /** This replica, so that it skips its own notices when they come back. */
    private readonly self: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  async start(bus: PgBus): Promise<void> {
    await bus.subscribe(CHANGES, (m) => {
      const { from, notice } = m as RelayedNotice;
      if (from === this.self) return;
      this.incoming.add(notice);
      this.feed.publish(notice);
    });
    this.unsubscribe = this.feed.subscribe((notice) => {
      if (this.incoming.has(notice)) return;
      if (this.outgoing.push({ from: this.self, notice }) === 1) setImmediate(() => void this.send());
    });
  }

  stop(): void {
    this.unsubscribe?.();
  }

  private async send(): Promise<void> {
    const batch = this.outgoing;
    this.outgoing = [];
    await notify(this.db, CHANGES, batch).catch(this.onError);
  }
}
