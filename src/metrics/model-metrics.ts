/**
 * What the controller holds in memory, as gauges read at each scrape (issue #43): each cluster
 * queue's pending jobs by status (Kueue's `kueue_pending_workloads{cluster_queue,status}`) and the
 * reservations it holds, the factories' workers and the wells' instances by state, and the devices
 * of each factory's machine in use. Nothing here reads the store: a scrape walks the controller's
 * model (its queues, its live workers and instances), never a table.
 */
import type { Registry } from 'prom-client';
import { collectedGauge, type SetSample } from './collected-gauge.js';

/**
 * Why a queued job waits: `active` — the scheduler looks at it in its next pass; `inadmissible` —
 * it cannot be admitted until quota is released (it does not fit what is left, or a Backfill
 * reservation holds it back); `held` — its queue is on hold, or it waits outside the scheduler
 * (its dependencies, an array's throttle, a retry's backoff, a privilege its project lost).
 */
export const PENDING_STATUSES = ['active', 'inadmissible', 'held'] as const;
export type PendingStatusName = (typeof PENDING_STATUSES)[number];

/**
 * A worker's state: `creating` (recorded, its factory not done making it), `ready` (made, for its
 * job), `idle` (a pilot waiting for its next job), `destroying` (until its destruction is confirmed).
 */
export const WORKER_STATES = ['creating', 'ready', 'idle', 'destroying'] as const;
export type WorkerState = (typeof WORKER_STATES)[number];
/** A resource instance's state, as a worker's (an instance is never idle). */
export const INSTANCE_STATES = ['creating', 'ready', 'destroying'] as const;
export type InstanceState = (typeof INSTANCE_STATES)[number];

/** A factory's or a well's holdings by state: every state, at 0 when none is in it. */
export interface ProviderStates<S extends string> {
  name: string;
  states: Record<S, number>;
}

/** The controller's model as the gauges read it (controller/model-figures.ts); the leader's only. */
export interface ModelFigures {
  /** Every cluster queue's queued jobs by status: those the scheduler holds and those outside it. */
  pending(): Iterable<{ queue: string } & Record<PendingStatusName, number>>;
  /** Every cluster queue's reservations: a Backfill plan's, and a preemptor's while its victims stop. */
  reservations(): Iterable<{ queue: string; backfill: number; preemption: number }>;
  /** Per project with unfinished jobs: queued, admitted (holding quota, not yet running) and running. */
  projects(): Iterable<{ project: string; queued: number; admitted: number; running: number }>;
  /** Every factory's workers by state. */
  workers(): Iterable<ProviderStates<WorkerState>>;
  /** Every well's resource instances by state. */
  instances(): Iterable<ProviderStates<InstanceState>>;
}

/** A factory's devices, by kind (docs/DEVICES.md). */
export interface DeviceFigures {
  name: string;
  devices?: { kind: string; total: number; inUse: number }[];
}

/**
 * Registers the gauges; `model` answers undefined where this replica does not hold the model (a
 * follower: the leader's series come from the leader), and `factories` the factories' figures.
 */
export function modelGauges(
  registers: Registry[],
  model: () => ModelFigures | undefined,
  factories: () => Iterable<DeviceFigures>,
): void {
  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: L[],
    fill: (set: SetSample<L>) => void,
  ) => collectedGauge(registers, name, help, labelNames, fill);
  gauge(
    'berth_pending_jobs',
    'Queued jobs per cluster queue by status: active (looked at in the next pass), inadmissible (cannot be admitted until quota is released), held (queue on hold; dependencies, throttle, retry backoff, a lost privilege)',
    ['queue', 'status'],
    (set) => {
      for (const q of model()?.pending() ?? [])
        for (const status of PENDING_STATUSES) set({ queue: q.queue, status }, q[status]);
    },
  );
  gauge(
    'berth_scheduler_reservations',
    "Reservations a cluster queue holds now, by kind: backfill (its Backfill plan's, as of the last pass), preemption (a preemptor's while its victims stop)",
    ['queue', 'kind'],
    (set) => {
      for (const r of model()?.reservations() ?? []) {
        set({ queue: r.queue, kind: 'backfill' }, r.backfill);
        set({ queue: r.queue, kind: 'preemption' }, r.preemption);
      }
    },
  );
  gauge(
    'berth_workers',
    'Workers per factory by state: creating, ready (for its job), idle (a pilot between jobs), destroying (until confirmed)',
    ['factory', 'state'],
    (set) => {
      for (const f of model()?.workers() ?? [])
        for (const state of WORKER_STATES) set({ factory: f.name, state }, f.states[state]);
    },
  );
  gauge(
    'berth_resource_instances',
    'Resource instances per well (resource type) by state: creating, ready, destroying (until confirmed)',
    ['well', 'state'],
    (set) => {
      for (const w of model()?.instances() ?? [])
        for (const state of INSTANCE_STATES) set({ well: w.name, state }, w.states[state]);
    },
  );
  const devices = (name: string, help: string, value: (d: { total: number; inUse: number }) => number) =>
    gauge(name, help, ['factory', 'kind'], (set) => {
      for (const f of factories())
        for (const d of f.devices ?? []) set({ factory: f.name, kind: d.kind }, value(d));
    });
  devices(
    'berth_factory_devices',
    "Devices of a factory's machine, by kind (docs/DEVICES.md)",
    (d) => d.total,
  );
  devices(
    'berth_factory_devices_in_use',
    "Devices of a factory's machine held by its workers now, by kind",
    (d) => d.inUse,
  );
}
