/**
 * Committed changes that others act on — a submission, a cancel, a queue or project changed —
 * announced once, by the service that makes the change, inside the unit that writes it
 * (`commitUnit`). Two kinds of subscriber hear of them:
 *
 * - in the transaction, before it commits: the replicas' outbox (replicas/outbox.ts), which sends
 *   each as a control message to the leader; PostgreSQL delivers a notification only if its
 *   transaction commits, so the leader never hears of a change that did not happen;
 * - once the unit has committed: this server's controller port (the controller itself on a single
 *   server or the leader; on a follower its port, which keeps only its queue models) and the live
 *   stream's change feed.
 *
 * A unit that is rolled back announces nothing after commit. (Its control message may still go
 * out when a group commit rolls back one unit alone, to a savepoint: the leader checks each
 * message against the store, replicas/leader-inbox.ts, so it changes nothing.)
 */
import type { ClusterQueue } from '../../domain/cluster-queue.js';
import type { JobRecord, JobState } from '../../domain/job.js';
import type { ProjectAccess } from '../../domain/project.js';
import type { Db } from '../../store/store.js';
import type { ControlMessage } from './control.js';

export type Notice =
  /** A job was submitted. */
  | { kind: 'submitted'; record: JobRecord }
  /** A job array was submitted: its tasks, the first the array's head. */
  | { kind: 'array-submitted'; records: JobRecord[] }
  /** Cancelling a job was requested and recorded; it was in `state` then. */
  | { kind: 'cancel'; id: number; project: string; state: JobState; by: string }
  /** Cancelling every unfinished task of array `id` was requested and recorded. */
  | { kind: 'array-cancel'; id: number; by: string; taskIds: number[] }
  /** A cluster queue was created or changed (`queue`), or deleted (undefined). */
  | { kind: 'queue'; name: string; queue: ClusterQueue | undefined }
  /** A project was created, or its fair-share weight changed. */
  | { kind: 'weight'; project: string; weight: number }
  /** A project moved to another queue, or its privileges changed. */
  | { kind: 'access'; access: ProjectAccess }
  /** A project was created or changed (its members, its description): for the live streams. */
  | { kind: 'project'; project: string }
  /** A project was deleted: its unfinished jobs, filed under `archivedAs`, are to be cancelled. */
  | { kind: 'project-deleted'; project: string; archivedAs: string; jobIds: number[]; by: string };

/** What the leading replica is sent of a notice (what it reads again from the store), if anything. */
export function controlMessage(n: Notice): ControlMessage | undefined {
  switch (n.kind) {
    case 'submitted':
      return { kind: 'submitted', id: n.record.id };
    case 'array-submitted':
      return { kind: 'array-submitted', id: n.records[0]!.id };
    case 'cancel':
      return { kind: 'cancel', id: n.id, by: n.by };
    case 'array-cancel':
      return { kind: 'array-cancel', id: n.id, by: n.by };
    case 'queue':
      return { kind: 'queue', name: n.name };
    case 'weight':
      return { kind: 'weight', project: n.project };
    case 'access':
      return { kind: 'project', project: n.access.name };
    case 'project':
      return undefined;
    case 'project-deleted':
      return { kind: 'project-deleted', project: n.project, archivedAs: n.archivedAs, by: n.by };
  }
}

/** A subscriber after commit; what it throws reaches the service that made the change. */
export type NoticeSubscriber = (n: Notice) => Promise<void> | void;

/** The installation's side of the control messages: queued in a transaction, sent before it commits. */
export interface Outbox {
  add(tx: Db, m: ControlMessage): void;
  flush(tx: Db): Promise<void>;
}

export class Notices {
  private readonly subscribers: NoticeSubscriber[] = [];
  /** Set on a server with replicas (replicas/replica-node.ts). */
  outbox: Outbox | undefined;

  /** Hears of every notice once its unit has committed, after those subscribed before it. */
  subscribe(fn: NoticeSubscriber): void {
    this.subscribers.push(fn);
  }

  /** In the unit that makes the change: the outbox gets its control message in the transaction. */
  queue(tx: Db, n: Notice): void {
    const m = this.outbox && controlMessage(n);
    if (m) this.outbox!.add(tx, m);
  }

  /**
   * After the unit committed: every subscriber hears of each notice, in order. The first error a
   * subscriber threw is thrown once all have heard (say a cancel of a job that ended meanwhile).
   */
  async deliver(notices: Notice[]): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (const n of notices)
      for (const fn of this.subscribers) {
        try {
          await fn(n);
        } catch (error) {
          failure ??= { error };
        }
      }
    if (failure) throw failure.error;
  }
}

/** Gives a notice to be announced once the unit commits. */
export type Announce = (n: Notice) => void;

/** What a unit needs of the server: its store, group commit and notices. */
export interface UnitContext {
  store: { transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> };
  groupCommit?: { run<T>(fn: (tx: Db) => Promise<T>): Promise<T> };
  notices?: Notices;
}

/**
 * Writes `fn` as one unit — on the group commit the submissions share when `grouped` and there is
 * one (its batches send the outbox before they commit), else in a transaction of its own — and
 * then announces what it gave `announce`. A unit run again (a batch retried) announces only what
 * its last run gave.
 */
export async function commitUnit<T>(
  ctx: UnitContext,
  fn: (tx: Db, announce: Announce) => Promise<T>,
  opts: { grouped?: boolean } = {},
): Promise<T> {
  const notices = ctx.notices;
  let given: Notice[] = [];
  const unit = (tx: Db): Promise<T> => {
    given = [];
    return fn(tx, (n) => {
      given.push(n);
      notices?.queue(tx, n);
    });
  };
  const value =
    opts.grouped && ctx.groupCommit
      ? await ctx.groupCommit.run(unit)
      : await ctx.store.transaction(async (tx) => {
          const v = await unit(tx);
          await notices?.outbox?.flush(tx);
          return v;
        });
  if (notices && given.length > 0) await notices.deliver(given);
  return value;
}
