/**
 * The members of a gang job's run (a job with `workers` > 1): one agent per rank, all on the one
 * worker the job holds. Pure bookkeeping, no I/O: the agent desk asks it whether every rank has
 * arrived (the rendezvous that gives each its peers' hosts), which ranks are still heard from,
 * and, as ranks report, whether the run is over and how it ended.
 *
 * The run ends when every rank has reported. The first rank to fail decides the outcome (its
 * rank is named in the reason) and the others are told to stop; when all succeed, the job does.
 */
import type { FinishRequest } from '../agent/protocol.js';
import type { GangRun, RankReport } from './model.js';

export class Gang implements GangRun {
  /** Each rank's host, once it has arrived (called start). */
  readonly hosts: (string | null)[];
  /** When each rank was last heard from. */
  private readonly heard: number[];
  private readonly results: (FinishRequest | null)[];
  private arrived = 0;
  private reported = 0;
  private firstFailure: { rank: number; result: FinishRequest } | null = null;

  /**
   * `running`: the run had already begun (taken over after a restart), so every rank counts as
   * arrived, and as heard from `now`.
   */
  constructor(
    readonly size: number,
    now: number,
    running = false,
  ) {
    this.hosts = Array.from({ length: size }, () => (running ? '' : null));
    this.heard = Array.from({ length: size }, () => now);
    this.results = Array.from({ length: size }, () => null);
    if (running) this.arrived = size;
  }

  /** A rank asks to start; whether all ranks are here now. */
  arrive(rank: number, host: string, now: number): boolean {
    if (this.hosts[rank] === null) {
      this.hosts[rank] = host;
      this.arrived++;
    }
    this.heard[rank] = now;
    return this.complete;
  }

  /** Every rank has arrived: their hosts are known. */
  get complete(): boolean {
    return this.arrived === this.size;
  }

  hasReported(rank: number): boolean {
    return this.results[rank] !== null;
  }

  /** A rank's heartbeat. */
  beat(rank: number, now: number): void {
    this.heard[rank] = now;
  }

  /** When the longest-silent rank still running was last heard from (now, if none runs). */
  oldestHeard(now: number): number {
    let oldest = now;
    for (let r = 0; r < this.size; r++)
      if (this.results[r] === null) oldest = Math.min(oldest, this.heard[r]!);
    return oldest;
  }

  /** A rank reports how its part ended (a second report of the same rank is ignored). */
  report(rank: number, result: FinishRequest): RankReport {
    if (this.results[rank] !== null) return { kind: 'wait' };
    this.results[rank] = result;
    this.reported++;
    const failed = !(result.outcome === 'exited' && result.exitCode === 0);
    const first = failed && this.firstFailure === null;
    if (first) this.firstFailure = { rank, result };
    if (this.reported === this.size) return { kind: 'done', result: this.outcome() };
    return first ? { kind: 'stop-others', reason: describeRank(rank, result) } : { kind: 'wait' };
  }

  /** The first rank's failure, named by its rank; null while none has failed. */
  failure(): FinishRequest | null {
    if (!this.firstFailure) return null;
    const { rank, result } = this.firstFailure;
    return { ...result, message: describeRank(rank, result) };
  }

  /** The run's outcome: the first failure; success if there was none. */
  private outcome(): FinishRequest {
    return this.failure() ?? { outcome: 'exited', exitCode: 0, signal: null };
  }
}

/** "rank 2 of 3: exited with code 3" */
function describeRank(rank: number, r: FinishRequest): string {
  const how =
    r.message ??
    (r.outcome === 'exited'
      ? r.signal
        ? `killed by ${r.signal} (exit code ${r.exitCode})`
        : `exited with code ${r.exitCode}`
      : r.outcome);
  return `rank ${rank}: ${how}`;
}
