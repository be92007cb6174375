/**
 * The controller's model as the metrics' gauges read it at each scrape (metrics/model-metrics.ts):
 * each queue's queued jobs by status and its reservations, each project's jobs, each factory's
 * workers and each well's instances by state. From memory only, never the store: a queue's
 * statuses cost the scheduler's count of what it could admit now (QueueState.inadmissible), the
 * rest a walk over the live workers and instances, bounded by the factories' and wells' capacity.
 */
import type { InstanceState, ModelFigures, ProviderStates, WorkerState } from '../metrics/model-metrics.js';
import type { ControllerCore } from './core.js';
import type { Holdings } from './holdings.js';
import type { Pilots } from './pilots.js';
import type { QueueModels } from './queue-models.js';

export class ModelFiguresReader implements ModelFigures {
  constructor(
    private readonly core: ControllerCore,
    private readonly queues: QueueModels,
    private readonly holdings: Holdings,
    private readonly pilots: Pilots,
  ) {}

  *pending(): Iterable<{ queue: string; active: number; inadmissible: number; held: number }> {
    const { o, jobs } = this.core;
    for (const queue of this.queues.names()) {
      const s = o.scheduler.pendingStatus(queue);
      if (s === undefined) continue;
      // Queued and outside the scheduler: its dependencies, an array's throttle, a retry's
      // backoff, a privilege its project lost; as held as a queue on hold.
      const outside = Math.max(0, jobs.queuedInQueue(queue) - (s.active + s.inadmissible + s.held));
      yield { queue, active: s.active, inadmissible: s.inadmissible, held: s.held + outside };
    }
  }

  *reservations(): Iterable<{ queue: string; backfill: number; preemption: number }> {
    for (const queue of this.queues.names()) {
      const r = this.core.o.scheduler.reservationsHeld(queue);
      if (r) yield { queue, ...r };
    }
  }

  projects(): Iterable<{ project: string; queued: number; admitted: number; running: number }> {
    return this.core.jobs.perProject();
  }

  workers(): Iterable<ProviderStates<WorkerState>> {
    const by = new Map<string, Record<WorkerState, number>>();
    for (const f of this.core.o.factories.keys())
      by.set(f, { creating: 0, ready: 0, idle: 0, destroying: 0 });
    for (const h of this.holdings.values()) {
      const states = h.kind === 'worker' ? by.get(h.provider) : undefined;
      if (!states) continue;
      const state: WorkerState = h.destroying
        ? 'destroying'
        : h.handle === null
          ? 'creating'
          : this.pilots.isIdle(h.id)
            ? 'idle'
            : 'ready';
      states[state]++;
    }
    return [...by].map(([name, states]) => ({ name, states }));
  }

  instances(): Iterable<ProviderStates<InstanceState>> {
    const by = new Map<string, Record<InstanceState, number>>();
    for (const w of this.core.o.wells.keys()) by.set(w, { creating: 0, ready: 0, destroying: 0 });
    for (const h of this.holdings.values()) {
      const states = h.kind === 'instance' ? by.get(h.provider) : undefined;
      if (!states) continue;
      states[h.destroying ? 'destroying' : h.metadata === null ? 'creating' : 'ready']++;
    }
    return [...by].map(([name, states]) => ({ name, states }));
  }
}
