/**
 * Submits the scenario's workloads at their planned times, as Kueue's generator does: per queue,
 * each workloads set on its own timer, one creation after another (so a slow submission delays the
 * set's next one, as in Kueue).
 */
import { setTimeout as delay } from 'node:timers/promises';
import { post } from '../lib.js';
import type { ExpandedScenario, PlannedWorkload } from '../../src/simulate/scenario.js';

export interface Submitted {
  plan: PlannedWorkload;
  id: number;
  /** This process's clock when the submission was sent. */
  sentAt: number;
}

export interface Submission {
  /** Resolves when every workload has been submitted. */
  done: Promise<void>;
  /** Job id → what was submitted; filled as responses arrive. */
  jobs: Map<number, Submitted>;
  sent(): number;
  failures(): string[];
}

/** Job body: the simulated factory runs `sleep S` for S seconds without a process. */
export const jobBody = (w: PlannedWorkload, resource: string) => ({
  name: w.name,
  command: ['sleep', String(w.runtimeMs / 1000)],
  requests: { [resource]: String(w.request) },
  priority: w.priority,
});

/** Starts the timers now; `start` is the generation's time origin (Date.now()). */
export function submitScenario(
  api: string,
  token: string,
  plan: ExpandedScenario,
  start: number,
): Submission {
  const sets = new Map<string, PlannedWorkload[]>();
  for (const w of plan.workloads) {
    const key = `${w.queue}/${w.set}`;
    const list = sets.get(key);
    if (list === undefined) sets.set(key, [w]);
    else list.push(w);
  }
  const jobs = new Map<number, Submitted>();
  const failures: string[] = [];
  let sent = 0;
  const runSet = async (list: PlannedWorkload[]) => {
    for (const w of list) {
      const wait = start + w.at - Date.now();
      if (wait > 0) await delay(wait);
      const sentAt = Date.now();
      sent++;
      try {
        const job = (await post(api, token, `/projects/${w.queue}/jobs`, jobBody(w, plan.resource))) as {
          id: number;
        };
        jobs.set(job.id, { plan: w, id: job.id, sentAt });
      } catch (e) {
        failures.push(e instanceof Error ? e.message : String(e));
      }
    }
  };
  const done = Promise.all([...sets.values()].map(runSet)).then(() => undefined);
  return { done, jobs, sent: () => sent, failures: () => failures };
}

/**
 * The plan as it was really submitted: each workload created when the server recorded it, those
 * that failed left out. Replayed by the simulator, it takes the generator's own lag out of the
 * comparison.
 */
export function asSubmitted(
  plan: ExpandedScenario,
  arrivals: { plan: PlannedWorkload; createdAt: number }[],
  start: number,
): ExpandedScenario {
  const workloads = arrivals
    .map((a) => ({ ...a.plan, at: a.createdAt - start }))
    .sort((a, b) => a.at - b.at || a.seq - b.seq)
    .map((w, i) => ({ ...w, seq: i + 1 }));
  return { ...plan, workloads };
}
