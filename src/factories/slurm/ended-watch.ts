/**
 * Waits for Slurm jobs to end, as a destroy does after its scancel (or after a direct worker's
 * exit file, while Slurm ends its job): one squeue call every 200 ms
 * for all of the jobs being waited for, however many destroys wait (never one call per job).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isEndedState, type SlurmCli } from './slurm-cli.js';

/** How long destroy waits for a cancelled Slurm job to end: past Slurm's default KillWait (30 s). */
const DESTROY_WAIT_MS = 45_000;
/** How often squeue is asked whether the Slurm jobs of destroys in progress have ended. */
const ENDED_POLL_MS = 200;

interface EndWaiter {
  done: () => void;
  fail: (e: Error) => void;
  deadline: number;
}

export class EndedWatch {
  /** The Slurm jobs waited for: their last state, and the waiters. */
  private readonly ending = new Map<string, { state: string; waiters: EndWaiter[] }>();
  private watching = false;

  constructor(private readonly cli: SlurmCli) {}

  /** Resolves once Slurm job `id` has ended (or is gone); watched with every other one by one squeue. */
  until(id: string): Promise<void> {
    return new Promise<void>((done, fail) => {
      const waiters = this.ending.get(id) ?? { state: 'unknown', waiters: [] };
      waiters.waiters.push({ done, fail, deadline: Date.now() + DESTROY_WAIT_MS });
      this.ending.set(id, waiters);
      if (!this.watching) {
        this.watching = true;
        void this.watch();
      }
    });
  }

  /** While destroys wait, one squeue call every 200 ms for all of their Slurm jobs. */
  private async watch(): Promise<void> {
    for (;;) {
      if (this.ending.size === 0) {
        this.watching = false;
        return;
      }
      const ids = [...this.ending.keys()];
      let live: Map<string, string> | undefined;
      try {
        live = new Map(
          (await this.cli.jobs({ ids })).filter((j) => !isEndedState(j.state)).map((j) => [j.id, j.state]),
        );
      } catch {
        live = undefined; // Slurm unreachable this time: asked again, deadlines still run
      }
      const now = Date.now();
      for (const id of ids) {
        const entry = this.ending.get(id)!;
        if (live && !live.has(id)) {
          this.ending.delete(id);
          for (const w of entry.waiters) w.done();
          continue;
        }
        entry.state = live?.get(id) ?? entry.state;
        const due = entry.waiters.filter((w) => now > w.deadline);
        if (due.length === 0) continue;
        entry.waiters = entry.waiters.filter((w) => now <= w.deadline);
        if (entry.waiters.length === 0) this.ending.delete(id);
        const err = new Error(`Slurm job ${id} (${entry.state}) did not end`);
        for (const w of due) w.fail(err);
      }
      await delay(ENDED_POLL_MS);
    }
  }
}
