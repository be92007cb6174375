/**
 * PostgreSQL's LISTEN/NOTIFY as a message bus between server replicas. LISTEN needs a connection
 * of its own, outside any pool (a pooled one may be recycled, taking its subscriptions with it),
 * so the bus keeps one client and reconnects it when it drops. Notifications sent while it was
 * away are lost: subscribers hear `reconnected` and re-read what they track from the tables.
 *
 * A notification is sent with `pg_notify` inside the transaction whose change it announces, so it
 * is delivered if and only if that change commits. Payloads are JSON, at most ~7,900 bytes (the
 * server's limit is 8,000); `notify` splits a list of messages across as many as it takes.
 */
import { sql } from 'kysely';
import pg from 'pg';
import type { Db } from './store.js';

const MAX_PAYLOAD = 7900;
const RECONNECT_MAX_MS = 5000;

export type BusHandler = (message: unknown) => void;

export class PgBus {
  private client: pg.Client | undefined;
  private readonly handlers = new Map<string, Set<BusHandler>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private closed = false;
  private attempts = 0;
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** Connects and listens on every channel subscribed so far (and later ones). */
  start(): Promise<void> {
    return (this.connecting ??= this.connect());
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'berth bus' });
    client.on('notification', (n) => this.deliver(n.channel, n.payload));
    client.on('error', (err) => {
      this.onError(err);
      void client.end().catch(() => {});
    });
    client.on('end', () => {
      // Only the live client's end starts a reconnection: a client that never connected has its
      // failure handled by whoever started it (one chain of retries, not one more per failure).
      if (this.client !== client) return;
      this.client = undefined;
      if (!this.closed) this.scheduleReconnect();
    });
    await client.connect();
    // Closed while it connected (a reconnection under way when the server stopped): a client left
    // listening would keep the process alive for ever, reconnecting to a store nobody reads.
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.client = client;
    this.attempts = 0;
  }

  private scheduleReconnect(): void {
    const delay = Math.min(RECONNECT_MAX_MS, 100 * 2 ** this.attempts++);
    const timer = setTimeout(() => {
      if (this.closed) return;
      this.connecting = undefined;
      this.start().then(
        () => {
          if (this.closed) return;
          for (const h of this.reconnectHandlers) h();
        },
        (err: unknown) => {
          this.onError(err);
          if (!this.closed) this.scheduleReconnect();
        },
      );
    }, delay);
    timer.unref();
  }

  private deliver(channel: string, payload: string | undefined): void {
    let messages: unknown[];
    try {
      messages = JSON.parse(payload ?? '[]') as unknown[];
    } catch (e) {
      this.onError(e);
      return;
    }
    for (const h of this.handlers.get(channel) ?? [])
      for (const m of messages) {
        try {
          h(m);
        } catch (e) {
          this.onError(e);
        }
      }
  }

  async subscribe(channel: string, handler: BusHandler): Promise<void> {
    let set = this.handlers.get(channel);
    if (!set) {
      this.handlers.set(channel, (set = new Set()));
      if (this.client) await this.client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
    set.add(handler);
  }

  /** Called after the bus reconnected: notifications may have been missed meanwhile. */
  onReconnect(handler: () => void): void {
    this.reconnectHandlers.add(handler);
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}

/** Sends `messages` on `channel` from inside the transaction `db` (delivered when it commits). */
export async function notify(db: Db, channel: string, messages: unknown[]): Promise<void> {
  let batch: string[] = [];
  let size = 2;
  const flush = async () => {
    if (batch.length === 0) return;
    await sql`SELECT pg_notify(${channel}, ${`[${batch.join(',')}]`})`.execute(db);
    batch = [];
    size = 2;
  };
  for (const m of messages) {
    const text = JSON.stringify(m);
    const bytes = Buffer.byteLength(text) + 1;
    if (bytes > MAX_PAYLOAD) throw new Error(`a message on ${channel} is too large to notify`);
    if (size + bytes > MAX_PAYLOAD) await flush();
    batch.push(text);
    size += bytes;
  }
  await flush();
}
