/**
 * The leader's live figures — each queue's usage, borrowed, pending, admitted and running; each
 * factory's and resource type's capacity, use and waiters — published for the other replicas: a
 * row in `live_figures`, rewritten at most twice a second when they changed, and a notification
 * that wakes the readers. A follower answers `GET /cluster-queues` and the dashboard's figures
 * from the last copy it read (at most ~half a second behind the leader).
 */
import type { ControllerReadModel, LiveQueueFigures } from '../controller/port.js';
import type { PoolFigures } from '../domain/pool-figures.js';
import type { PgBus } from '../store/pg-bus.js';
import { notify } from '../store/pg-bus.js';
import type { Db } from '../store/store.js';
import { FIGURES } from './messages.js';

export interface PublishedFigures {
  term: number;
  queues: Record<string, LiveQueueFigures>;
  factories: PoolFigures[];
  resources: PoolFigures[];
}

const ROW = 'figures';
const EVERY_MS = 500;

/** What the leader's controller can tell. */
export type FiguresSource = Pick<
  ControllerReadModel,
  'queueModels' | 'queueFigures' | 'factoryFigures' | 'resourceFigures'
>;

export class FiguresPublisher {
  private timer: NodeJS.Timeout | undefined;
  private last = '';
  private busy = false;

  constructor(
    private readonly db: Db,
    private readonly term: number,
    private readonly source: FiguresSource,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.publish(), EVERY_MS);
    this.timer.unref();
    void this.publish();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async publish(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const queues: Record<string, LiveQueueFigures> = {};
      for (const { name } of this.source.queueModels()) {
        const f = this.source.queueFigures(name);
        if (f) queues[name] = f;
      }
      const figures: PublishedFigures = {
        term: this.term,
        queues,
        factories: this.source.factoryFigures(),
        resources: this.source.resourceFigures(),
      };
      const data = JSON.stringify(figures);
      if (data === this.last) return;
      await this.db.transaction().execute(async (tx) => {
        const row = { name: ROW, term: this.term, data, at: Date.now() };
        await tx
          .insertInto('live_figures')
          .values(row)
          .onConflict((oc) => oc.column('name').doUpdateSet({ term: row.term, data: row.data, at: row.at }))
          .execute();
        await notify(tx, FIGURES, [this.term]);
      });
      this.last = data;
    } catch (e) {
      this.onError(e);
    } finally {
      this.busy = false;
    }
  }
}

/** A follower's copy of the leader's figures, read again whenever the leader says they changed. */
export class FiguresReader {
  latest: PublishedFigures = { term: 0, queues: {}, factories: [], resources: [] };
  private reading: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly db: Db,
    private readonly onError: (err: unknown) => void,
  ) {}

  async start(bus: PgBus): Promise<void> {
    await bus.subscribe(FIGURES, () => this.refresh());
    bus.onReconnect(() => this.refresh());
    this.refresh();
    await this.reading;
  }

  /**
   * Reads no more, and waits for a read under way: the store closes next, and a read still in
   * flight would fail against it ("driver has already been destroyed", logged as an error).
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.reading;
  }

  /** Reads the row again (once more after the current read, if one is under way). */
  refresh(): void {
    if (this.stopped) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.read()
      .catch(this.onError)
      .finally(() => {
        this.reading = undefined;
        if (this.again) {
          this.again = false;
          this.refresh();
        }
      });
  }

  private async read(): Promise<void> {
    const row = await this.db
      .selectFrom('live_figures')
      .select('data')
      .where('name', '=', ROW)
      .executeTakeFirst();
    if (row) this.latest = JSON.parse(row.data) as PublishedFigures;
  }
}
