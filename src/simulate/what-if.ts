/**
 * What if, on the live cluster: `berth simulate --from-server` takes what the leader's start-time
 * estimates forecast from (its queues, the jobs holding quota with their expected ends, the
 * pending jobs with their expected runtimes, the arrivals projected from the recent past), makes a
 * change — a queue's quota or borrowing limit, a project's weight, a queue's cohort — and replays
 * both on the real scheduler (scheduler/forecast.ts): when would the pending jobs start, as things
 * are and with the change. Pure: no I/O.
 */
import { BadRequestError } from '../domain/errors.js';
import { parseAmount } from '../domain/quantity.js';
import { forecast, type ForecastInput } from '../scheduler/forecast.js';
import type { QueueModel } from '../scheduler/types.js';

export type { ForecastInput } from '../scheduler/forecast.js';

/** `queue`'s `resource` set to `amount` (a quantity, e.g. `16`, `500m`, `64Gi`). */
export interface QueueAmount {
  queue: string;
  resource: string;
  amount: string;
}

export interface LiveChange {
  quota?: QueueAmount[];
  borrowingLimit?: QueueAmount[];
  /** Project → fair-share weight. */
  weight?: Record<string, number>;
  /** Queue → the cohort it joins (null: none). */
  cohort?: Record<string, string | null>;
}

export interface WhatIfJob {
  id: number;
  project: string;
  queue: string;
  priority: number;
  /** Forecast start (ms) as things are, and with the change; null: not within the horizon. */
  now: number | null;
  changed: number | null;
}

export interface WhatIfQueue {
  queue: string;
  pending: number;
  /** Of its pending jobs: how many start within the horizon, and the median and mean time from now to their start. */
  now: StartFigures;
  changed: StartFigures;
}

export interface StartFigures {
  starting: number;
  medianMs: number | null;
  meanMs: number | null;
}

export interface WhatIfReport {
  /** The forecast's present (ms). */
  at: number;
  jobs: WhatIfJob[];
  queues: WhatIfQueue[];
}

/** A copy of `input` with `change` made. BadRequestError names an unknown queue or a bad amount. */
export function applyChange(input: ForecastInput, change: LiveChange): ForecastInput {
  const queues = new Map(input.queues.map((q) => [q.name, structuredClone(q)]));
  const queue = (name: string, flag: string): QueueModel => {
    const q = queues.get(name);
    if (!q)
      throw new BadRequestError(
        `${flag}: no cluster queue named "${name}" (queues: ${[...queues.keys()].join(', ') || 'none'})`,
      );
    return q;
  };
  for (const c of change.quota ?? [])
    queue(c.queue, '--quota').nominal[c.resource] = parseAmount(
      c.resource,
      c.amount,
      `--quota ${c.queue}:${c.resource}`,
    );
  for (const c of change.borrowingLimit ?? [])
    queue(c.queue, '--borrowing-limit').borrowingLimit[c.resource] = parseAmount(
      c.resource,
      c.amount,
      `--borrowing-limit ${c.queue}:${c.resource}`,
    );
  for (const [name, cohort] of Object.entries(change.cohort ?? [])) queue(name, '--cohort').cohort = cohort;
  const weights = new Map(input.weights ?? []);
  for (const [project, weight] of Object.entries(change.weight ?? {})) weights.set(project, weight);
  return { ...input, queues: [...queues.values()], weights: [...weights] };
}

export function whatIf(input: ForecastInput, change: LiveChange): WhatIfReport {
  const before = forecast(input).startAt;
  const after = forecast(applyChange(input, change)).startAt;
  const jobs: WhatIfJob[] = input.pending.map(({ workload: w }) => ({
    id: w.id,
    project: w.project,
    queue: w.queue,
    priority: w.priority,
    now: before.get(w.id) ?? null,
    changed: after.get(w.id) ?? null,
  }));
  const byQueue = new Map<string, WhatIfJob[]>();
  for (const j of jobs) {
    let list = byQueue.get(j.queue);
    if (!list) byQueue.set(j.queue, (list = []));
    list.push(j);
  }
  const queues = input.queues
    .filter((q) => byQueue.has(q.name))
    .map((q): WhatIfQueue => {
      const list = byQueue.get(q.name)!;
      return {
        queue: q.name,
        pending: list.length,
        now: figures(
          list.map((j) => j.now),
          input.now,
        ),
        changed: figures(
          list.map((j) => j.changed),
          input.now,
        ),
      };
    });
  return { at: input.now, jobs, queues };
}

function figures(starts: (number | null)[], now: number): StartFigures {
  const waits = starts.filter((s): s is number => s !== null).map((s) => s - now);
  if (waits.length === 0) return { starting: 0, medianMs: null, meanMs: null };
  const sorted = waits.sort((a, b) => a - b);
  return {
    starting: waits.length,
    medianMs: sorted[(sorted.length - 1) >> 1]!,
    meanMs: waits.reduce((a, b) => a + b, 0) / waits.length,
  };
}
