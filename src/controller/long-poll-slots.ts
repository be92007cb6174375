/**
 * The long polls a job's token may hold open at once (heartbeats, a gang's start rendezvous),
 * per rank. Job code is untrusted and holds its token: without a bound it could open any number
 * of polls, each a socket and a timer on the leader for up to a minute.
 *
 * A poll past the bound does not fail: the oldest open poll of that rank is answered at once
 * instead, and the new one waits. The agent holds one poll at a time and polls again as soon as
 * it is answered, so its poll is the newest and keeps waiting; a refusal (4xx) would make it stop
 * its job, and answering the new one at once would have it poll in a tight loop for as long as
 * the job's code holds the slots. The oldest is also the likeliest to be stale: a poll whose client
 * retried after a cut connection stays open here until its wait ends.
 */

/**
 * Per rank: the agent's one poll, plus room for a few stale ones (retries after cut connections)
 * before the agent's own is ever answered early. A gang of N ranks holds at most 4·N.
 */
export const MAX_OPEN_LONG_POLLS = 4;

export interface LongPollSlot {
  /** Aborts when a newer poll of the same rank needs the slot: the wait ends at once. */
  readonly signal: AbortSignal;
  /** The poll has ended: frees its slot. */
  leave(): void;
}

export class LongPollSlots {
  /** Per job and rank, the open polls, oldest first. */
  private readonly open = new Map<string, AbortController[]>();

  constructor(private readonly max = MAX_OPEN_LONG_POLLS) {}

  /** Opens a poll of `jobId`'s rank `rank`, ending its oldest open one when all slots are taken. */
  enter(jobId: number, rank: number): LongPollSlot {
    const key = `${jobId}/${rank}`;
    let polls = this.open.get(key);
    if (!polls) this.open.set(key, (polls = []));
    const own = polls;
    while (own.length >= this.max) own.shift()!.abort();
    const poll = new AbortController();
    own.push(poll);
    return {
      signal: poll.signal,
      leave: () => {
        const i = own.indexOf(poll);
        if (i >= 0) own.splice(i, 1);
        if (own.length === 0 && this.open.get(key) === own) this.open.delete(key);
      },
    };
  }
}
