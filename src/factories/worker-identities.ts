/**
 * Who a local factory's workers run as (factories/isolation.ts decides at start): each member
 * under a uid and gid of its own from the factory's range (uid-pool.ts), or, for a project mapped
 * to a user of this machine (`runAs.projects`), as that user. A uid goes back to the pool only
 * once no process of it is left; one that could not be emptied is held back and tried again.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { endProcesses, uidsWithProcesses, type JobIdentity } from '../agent/identity.js';
import type { UidRange } from '../domain/uid-range.js';
import { UidPool } from './uid-pool.js';
import type { UnixUser } from './unix-users.js';

export class WorkerIdentities {
  private readonly pool: UidPool | undefined;
  /** Each worker's members' identities, by rank. */
  private readonly held = new Map<number, JobIdentity[]>();
  private closed = false;

  /** Uids from `range` (absent: jobs run as the server's user), `users` for mapped projects. */
  constructor(
    private readonly range: UidRange | undefined,
    private readonly users: Map<string, UnixUser> | undefined,
  ) {
    if (range) this.pool = new UidPool(range);
  }

  /**
   * Ends what runs under the range's uids: processes of jobs of a server that died (its agent
   * host kills its jobs when it goes, but a process that left its job's group and cgroup outlives
   * that). The range is berth's alone (docs/CONFIGURATION.md).
   */
  async endStrays(): Promise<void> {
    if (!this.range) return;
    const strays = [...uidsWithProcesses(this.range.first, this.range.last)];
    await Promise.all(strays.map((uid) => endProcesses({ uid, gid: uid })));
  }

  /**
   * An identity for each of `members` of a job of `project`, or undefined when jobs run as the
   * server's user; throws a clear error when the range has none left. Hold them (`hold`) once the
   * worker is made, or give them back (`untake`) if it is not.
   */
  take(members: number, project: string): JobIdentity[] | undefined {
    // A project mapped to a user of this machine runs as that user, every member.
    const user = this.users?.get(project);
    if (user) return Array.from({ length: members }, () => ({ uid: user.uid, gid: user.gid, shared: true }));
    return this.pool?.takeAll(members).map((uid) => ({ uid, gid: uid }));
  }

  /** Identities taken for a worker that was not made: nothing ran under them. */
  untake(ids: JobIdentity[] | undefined): void {
    for (const id of ids ?? []) if (!id.shared) this.pool?.give(id.uid);
  }

  hold(workerId: number, ids: JobIdentity[]): void {
    this.held.set(workerId, ids);
  }

  /** Whether the worker runs under uids of its own (not the server's user). */
  holds(workerId: number): boolean {
    return this.held.has(workerId);
  }

  /** The worker's uids, once no process of theirs is left (`clean`); held back otherwise. */
  giveBack(workerId: number, clean: boolean): void {
    const ids = this.held.get(workerId);
    this.held.delete(workerId);
    for (const id of ids ?? []) {
      if (id.shared) continue; // a mapped user's uid is never the pool's
      if (clean) this.pool?.give(id.uid);
      else {
        this.pool?.quarantine(id.uid);
        void this.recheck(id);
      }
    }
  }

  /** No more tries for uids held back: the server stops. */
  close(): void {
    this.closed = true;
  }

  /** A uid held back: given back once a later try ends its last processes. */
  private async recheck(id: JobIdentity): Promise<void> {
    for (let attempt = 0; attempt < 10 && !this.closed; attempt++) {
      // Unref'd: a uid held back must not keep a stopping server's process alive.
      await delay(1000 * 2 ** Math.min(attempt, 5), undefined, { ref: false });
      if (await endProcesses(id)) return this.pool?.give(id.uid);
    }
  }
}
