/**
 * A server replica on PostgreSQL. Every replica serves the API, the dashboard, live streams and
 * log follows; the one elected leader (elector.ts) also runs the controller and the scheduler.
 *
 * - As a follower it answers from the store, with the leader's published figures; its services'
 *   changes reach the leader as control messages (outbox.ts, leader-inbox.ts).
 * - Elected in term T, it builds a controller whose every write is fenced by T (a transaction
 *   checks the lease row first, see store/queries/lease.ts), rebuilds it from the store, and only
 *   then applies the control messages that arrived meanwhile.
 * - Deposed (a lost or unrenewed lease, a refused write), it stops its controller at once — its
 *   factories and wells are closed, so its local workers' jobs end — and follows again.
 */
import { randomBytes } from 'node:crypto';
import type { Controller } from '../controller/controller.js';
import type { ControllerPort } from '../controller/port.js';
import type { ServiceContext } from '../service/context.js';
import type { ControlMessage } from '../service/live/control.js';
import { GroupCommit, WriteTurns } from '../store/group-commit.js';
import { PgBus } from '../store/pg-bus.js';
import { isStoreUnavailable, isTransientConflict } from '../store/errors.js';
import { holdsTerm } from '../store/queries/lease.js';
import { initSetting } from '../store/queries/settings.js';
import type { Db } from '../store/store.js';
import { ChangeRelay } from './change-relay.js';
import { Elector } from './elector.js';
import { FollowerPort } from './follower-port.js';
import { applyControl, applySubmitted, catchUp } from './leader-inbox.js';
import { FiguresPublisher, FiguresReader } from './live-figures.js';
import { CONTROL } from './messages.js';
import { Outbox } from './outbox.js';

/** The `settings` row of the replicas' shared secret (ClusterView.secret). */
const REPLICA_SECRET = 'replica-secret';

/** The leader's writes after it lost its term. */
export class DeposedError extends Error {
  constructor(term: number) {
    super(`this replica no longer leads: term ${term} is over`);
    this.name = 'DeposedError';
  }
}

/** How a term's controller writes: fenced by the term, and stepping down when a write fails. */
export interface ControllerWrites {
  groupCommit: GroupCommit;
  fence: (tx: Db) => Promise<void>;
  onWriteFailed: (err: unknown) => void;
}

export interface ReplicaOptions {
  ctx: ServiceContext;
  /** The database URL (the bus's own connection). */
  url: string;
  /** Where this replica serves the API (known once it listens). */
  apiUrl: () => string;
  leaseMs: number;
  renewMs: number;
  /** Builds this term's controller with its writes on `groupCommit`, checked by `fence`. */
  buildController(writes: ControllerWrites): Controller;
  /** The controller port the services use now changed (leader's or follower's). */
  setController(port: ControllerPort): void;
  log: { info(msg: string): void; error(err: unknown, what: string): void };
}

interface Term {
  term: number;
  controller: Controller;
  publisher: FiguresPublisher;
  started: boolean;
  /** Control messages that came while the controller was being rebuilt. */
  buffered: ControlMessage[];
}

export class ReplicaNode {
  readonly bus: PgBus;
  readonly elector: Elector;
  private readonly outbox = new Outbox();
  /** The services' and the controller's writes, one transaction at a time (group-commit.ts). */
  private readonly turns = new WriteTurns();
  private readonly figures: FiguresReader;
  private readonly follower: FollowerPort;
  private readonly relay: ChangeRelay;
  private current: Term | undefined;
  /** Ids of 'submitted' messages of this turn of the event loop (control). */
  private readonly submitted: number[] = [];

  constructor(private readonly o: ReplicaOptions) {
    const db = o.ctx.store.db;
    const report = (what: string) => (err: unknown) => o.log.error(err, what);
    this.bus = new PgBus(o.url, report('bus'));
    this.figures = new FiguresReader(db, report('reading the leader figures'));
    this.elector = new Elector({
      db,
      bus: this.bus,
      url: o.apiUrl,
      leaseMs: o.leaseMs,
      renewMs: o.renewMs,
      elected: (term) => this.lead(term),
      deposed: (reason) => this.follow(reason),
      onError: (err, what) => o.log.error(err, what),
    });
    this.follower = new FollowerPort(
      db,
      this.figures,
      () => this.elector.leaderUrl,
      () => this.elector.leading && !this.current?.started,
    );
    this.relay = new ChangeRelay(db, o.ctx.changes!, this.elector.id, report('relaying changes'));
  }

  /** Connects the bus and sets the services up as a follower's; nothing leads yet. */
  async prepare(): Promise<void> {
    const { ctx } = this.o;
    await this.bus.start();
    await this.relay.start(this.bus);
    await this.figures.start(this.bus);
    await this.follower.loadQueues();
    await this.bus.subscribe(CONTROL, (m) => this.control(m as ControlMessage));
    this.bus.onReconnect(() => void this.reconnected());
    // Queues changed on other replicas: a submission here is checked against them.
    ctx.changes?.subscribe((n) => {
      if (n.kind === 'queue')
        void this.follower
          .reloadQueue(n.name)
          .catch((e: unknown) => this.o.log.error(e, `reading queue ${n.name}`));
    });
    ctx.notices!.outbox = this.outbox;
    ctx.groupCommit = new GroupCommit(ctx.store, {
      beforeCommit: (tx) => this.outbox.flush(tx),
      turns: this.turns,
    });
    // The first replica ever to start makes the key; the others, now and later, read it.
    const secret = await initSetting(ctx.store.db, REPLICA_SECRET, randomBytes(32).toString('hex'));
    ctx.cluster = {
      secret,
      role: () => (this.elector.leading ? 'leader' : 'follower'),
      term: () => this.elector.term,
      leaderUrl: () => this.elector.leaderUrl,
    };
    this.o.setController(this.follower);
  }

  /** Takes part in elections from now on. */
  start(): Promise<void> {
    return this.elector.start();
  }

  async stop(): Promise<void> {
    await this.elector.stop();
    this.relay.stop();
    await this.bus.close();
    await this.figures.stop();
  }

  private async lead(term: number): Promise<void> {
    const { ctx } = this.o;
    const fence = async (tx: Db) => {
      if (this.elector.leading && this.elector.term === term && (await holdsTerm(tx, this.elector.id, term)))
        return;
      this.elector.stepDown(`a write was refused: term ${term} is over`);
      throw new DeposedError(term);
    };
    const groupCommit = new GroupCommit(ctx.store, {
      fence,
      beforeCommit: (tx) => this.outbox.flush(tx),
      turns: this.turns,
    });
    // A write lost with the store's connection leaves the model out of step with the store: step
    // down, and let a fresh controller rebuild from it. (A unit refused on its own — a constraint
    // — rolls back alone and is reported, as on SQLite.)
    const onWriteFailed = (err: unknown) => {
      if (!(isStoreUnavailable(err) || isTransientConflict(err)) || this.current?.term !== term) return;
      const why = err instanceof Error ? err.message : String(err);
      this.elector.stepDown(`a write to the store failed (${why}); rebuilding from the store`, true);
    };
    const controller = this.o.buildController({ groupCommit, fence, onWriteFailed });
    const publisher = new FiguresPublisher(ctx.store.db, term, controller, (err) =>
      this.o.log.error(err, 'publishing figures'),
    );
    const t: Term = { term, controller, publisher, started: false, buffered: [] };
    this.current = t;
    this.o.log.info(`leading in term ${term}: rebuilding the scheduler from the store`);
    await controller.start();
    await catchUp(ctx.store.db, controller, false);
    t.started = true;
    this.o.setController(controller);
    for (const m of t.buffered.splice(0)) await applyControl(ctx.store.db, controller, m);
    publisher.start();
    this.o.log.info(`leading in term ${term}`);
  }

  private async follow(reason: string): Promise<void> {
    const t = this.current;
    this.current = undefined;
    this.o.setController(this.follower);
    if (!t) return;
    this.o.log.info(`no longer leading (term ${t.term}): ${reason}`);
    t.publisher.stop();
    await t.controller.stop();
  }

  private control(m: ControlMessage): void {
    const t = this.current;
    if (!t) return;
    if (!t.started) {
      t.buffered.push(m);
      return;
    }
    if (m.kind === 'submitted') {
      // Taken up together at the end of this turn of the event loop: one read for all of them,
      // and by then a submission made on this replica has usually told its controller directly
      // (the commit's answer and the notification come on different connections), so that there
      // is nothing left to read.
      if (this.submitted.push(m.id) === 1) setImmediate(() => void this.takeUpSubmitted(t));
      return;
    }
    void applyControl(this.o.ctx.store.db, t.controller, m).catch((e: unknown) =>
      this.o.log.error(e, `applying ${m.kind} from the bus`),
    );
  }

  private async takeUpSubmitted(t: Term): Promise<void> {
    const ids = this.submitted.splice(0);
    if (this.current !== t) return; // a new term's rebuild read them from the store
    await applySubmitted(this.o.ctx.store.db, t.controller, ids).catch((e: unknown) =>
      this.o.log.error(e, `taking up submitted jobs ${ids.join(', ')}`),
    );
  }

  /** Notifications may have been missed while the bus was away: read again what they tell. */
  private async reconnected(): Promise<void> {
    try {
      await this.follower.loadQueues();
      const t = this.current;
      if (t?.started) await catchUp(this.o.ctx.store.db, t.controller, true);
    } catch (e) {
      this.o.log.error(e, 'catching up after the bus reconnected');
    }
  }
}
