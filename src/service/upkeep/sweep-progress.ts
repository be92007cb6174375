/**
 * What the retention sweep tells the admin (pure: the clock is given). The first sweep after
 * retention is turned on over a long history, or after it is shortened, removes a backlog: a
 * million jobs took 3 to 14 minutes, by machine, at the pace that keeps submissions quick
 * (retention.ts; docs/PERFORMANCE.md). Without a word meanwhile, such a sweep looks like a server doing nothing, so
 * it says how far it has come every `everyMs`, with what is left and how long that should take,
 * and what it removed once it ends. A quick sweep (the hourly ones) says nothing.
 */

/** How often a sweep under way says how far it has come. */
export const PROGRESS_EVERY_MS = 60_000;

const count = (n: number) => Math.round(n).toLocaleString('en');

/** `3 min 38 s`, `42 s`, `1 h 5 min`: a duration for a person. */
export function describeDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return s % 60 === 0 ? `${min} min` : `${min} min ${s % 60} s`;
  const h = Math.floor(min / 60);
  return min % 60 === 0 ? `${h} h` : `${h} h ${min % 60} min`;
}

export class SweepProgress {
  private readonly started: number;
  private said: number;
  /** Whether a line of progress has been said. */
  private spoke = false;
  private jobs = 0;
  /** The first id the walk looked at (jobs before it went in earlier sweeps), and the last. */
  private from: number | undefined;
  private reached = 0;
  /** Where the walk will end: looked for once, when the first line is due. */
  private last: Promise<number | null> | undefined;

  /**
   * @param last the highest id the walk will look at (an estimate: the last job created before
   *   the cut-off), read once the first line is due; null when there is none to read
   */
  constructor(
    private readonly o: {
      say: (line: string) => void;
      everyMs: number;
      clock: () => number;
      last: () => Promise<number | null>;
    },
  ) {
    this.started = o.clock();
    this.said = this.started;
  }

  /** After a page of the walk, ids `firstId` to `reachedId`: `removed` more jobs. */
  async walked(removed: number, firstId: number, reachedId: number): Promise<void> {
    this.jobs += removed;
    this.from ??= firstId;
    this.reached = reachedId;
    const now = this.o.clock();
    if (now - this.said < this.o.everyMs) return;
    this.said = now;
    this.spoke = true;
    const elapsed = now - this.started;
    this.last ??= this.o.last();
    const last = await this.last;
    const left = last === null ? 0 : Math.max(0, last - reachedId);
    // The pace so far, in ids walked per ms: removed or not, each id costs the walk a look.
    const pace = (reachedId - this.from + 1) / Math.max(elapsed, 1);
    this.o.say(
      `retention: removed ${count(this.jobs)} ended jobs in ${describeDuration(elapsed)}, up to job ` +
        `${count(reachedId)}` +
        (left > 0
          ? `; about ${count(left)} more to look at, about ${describeDuration(left / pace)} at this pace`
          : ''),
    );
  }

  /**
   * The sweep's end: what it removed of each kind. Said after a line of progress, or when a stop
   * cut the sweep short having removed anything; a quick sweep says nothing.
   */
  ended(removed: { jobs: number; audit: number; ledger: number }, stopped: boolean): void {
    const elapsed = this.o.clock() - this.started;
    const anything = removed.jobs + removed.audit + removed.ledger > 0;
    if (!this.spoke && !(stopped && anything)) return;
    const what =
      `${count(removed.jobs)} ended jobs, ${count(removed.audit)} audit rows and ` +
      `${count(removed.ledger)} ledger rows in ${describeDuration(elapsed)}`;
    this.o.say(
      stopped
        ? `retention: stopped with the server after removing ${what}` +
            `${this.reached > 0 ? `, up to job ${count(this.reached)}` : ''}; the next sweep removes the rest`
        : `retention: the sweep removed ${what}`,
    );
  }
}
