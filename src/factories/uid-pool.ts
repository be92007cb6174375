/**
 * The uids a local factory runs its jobs under, one per running worker member, as HTCondor's slot
 * users and systemd's DynamicUser give each job an identity of its own. Pure bookkeeping: the
 * factory makes sure no process of a uid is left (agent/identity.ts) before it gives one back.
 *
 * - A uid is handed to one job at a time; a job's uid differs from every other running job's.
 * - The uid given back longest ago is handed out next (least recently used), so that a uid comes
 *   back to a job only after every other uid of the range has been used since: files a job left
 *   where it could write outside its directory (/tmp, /dev/shm) are reached by its uid's next job
 *   as late as the range allows. docs/SECURITY.md says what that does and does not guarantee.
 * - A uid whose processes could not all be ended is held back (`quarantine`) and not handed out
 *   until a later check finds it clean (`give`).
 */
import type { UidRange } from '../domain/uid-range.js';

export class UidPool {
  /** Uids never handed out yet: the next is `fresh`, up to the range's end. */
  private fresh: number;
  /** Uids given back, oldest first (a Set keeps insertion order). */
  private readonly returned = new Set<number>();
  private readonly inUse = new Set<number>();
  private readonly held = new Set<number>();

  constructor(readonly range: UidRange) {
    this.fresh = range.first;
  }

  /** A uid no running job has, or undefined when every uid of the range is in use or held. */
  take(): number | undefined {
    let uid: number | undefined;
    // Skipped: uids taken over (`reserve`) before the cursor reached them.
    while (this.fresh <= this.range.last && this.taken(this.fresh)) this.fresh++;
    if (this.fresh <= this.range.last) uid = this.fresh++;
    else {
      uid = this.returned.values().next().value;
      if (uid === undefined) return undefined;
      this.returned.delete(uid);
    }
    this.inUse.add(uid);
    return uid;
  }

  /**
   * A uid a running worker holds already: one a previous server handed out, taken over at start.
   * False if it is not of the range, or another holds it.
   */
  reserve(uid: number): boolean {
    if (!this.has(uid) || this.inUse.has(uid)) return false;
    this.returned.delete(uid);
    this.held.delete(uid);
    this.inUse.add(uid);
    return true;
  }

  /**
   * `n` uids no running job has, all or none (a gang's members): an Error that says why when the
   * range has too few left.
   */
  takeAll(n: number): number[] {
    const taken: number[] = [];
    for (let i = 0; i < n; i++) {
      const uid = this.take();
      if (uid === undefined) {
        for (const u of taken) this.give(u);
        const held = this.held.size;
        throw new Error(
          `no free uid in runAs.uids (${this.range.first}-${this.range.last})` +
            (held ? `: ${held} held back while processes of their last jobs are still alive` : ''),
        );
      }
      taken.push(uid);
    }
    return taken;
  }

  /** The job that had `uid` has ended and none of its processes is left. */
  give(uid: number): void {
    if (!this.inUse.delete(uid) && !this.held.delete(uid)) return;
    // One the cursor has not reached yet (taken over) is handed out as a fresh one.
    if (uid < this.fresh) this.returned.add(uid);
  }

  /** Processes of `uid` outlived its job: kept from every job until `give` (after a later check). */
  quarantine(uid: number): void {
    if (this.inUse.delete(uid)) this.held.add(uid);
  }

  /** The uids held back, for the factory's later checks. */
  quarantined(): number[] {
    return [...this.held];
  }

  get available(): number {
    let ahead = 0;
    for (const uid of [...this.inUse, ...this.held]) if (uid >= this.fresh) ahead++;
    return this.range.last + 1 - this.fresh - ahead + this.returned.size;
  }

  private taken(uid: number): boolean {
    return this.inUse.has(uid) || this.held.has(uid);
  }

  has(uid: number): boolean {
    return uid >= this.range.first && uid <= this.range.last;
  }
}
