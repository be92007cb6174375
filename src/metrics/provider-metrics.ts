/**
 * What factories and wells do, as an operator watches it: how long making a worker or a resource
 * instance takes (histograms per factory and per well: a Slurm worker's time includes its wait in
 * Slurm's queue) and how often it fails — what a "factory failing to make workers" alert is
 * written over (deploy/prometheus/berth-rules.yml).
 */
import { Counter, Histogram, type Registry } from 'prom-client';

export type ProviderKind = 'worker' | 'instance';

export class ProviderMetrics {
  private readonly seconds: Record<ProviderKind, Histogram<string>>;
  private readonly failures: Record<ProviderKind, Counter<string>>;

  constructor(registers: Registry[]) {
    const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800];
    this.seconds = {
      worker: new Histogram({
        name: 'berth_worker_creation_seconds',
        help: "Time to make a worker, per factory (a Slurm worker's includes its wait in Slurm's queue and its agent's registration)",
        labelNames: ['factory'],
        buckets,
        registers,
      }),
      instance: new Histogram({
        name: 'berth_instance_creation_seconds',
        help: 'Time to make a resource instance, per well',
        labelNames: ['well'],
        buckets,
        registers,
      }),
    };
    this.failures = {
      worker: new Counter({
        name: 'berth_worker_creation_failures_total',
        help: "Workers a factory could not make (the job's attempt fails, charged to the infrastructure)",
        labelNames: ['factory'],
        registers,
      }),
      instance: new Counter({
        name: 'berth_instance_creation_failures_total',
        help: 'Resource instances a well could not make',
        labelNames: ['well'],
        registers,
      }),
    };
  }

  /**
   * Shows every factory's and well's series at 0 from the start: a rate over a series that appears
   * only at its first failure misses that failure, and an alert on it has nothing to divide by.
   */
  known(factories: string[], wells: string[]): void {
    for (const factory of factories) {
      this.failures.worker.inc({ factory }, 0);
      this.seconds.worker.zero({ factory });
    }
    for (const well of wells) {
      this.failures.instance.inc({ well }, 0);
      this.seconds.instance.zero({ well });
    }
  }

  /** One creation by `provider` (a factory's or a well's name) ended: its time, or null when it failed. */
  created(kind: ProviderKind, provider: string, seconds: number | null): void {
    const label = kind === 'worker' ? { factory: provider } : { well: provider };
    if (seconds === null) this.failures[kind].inc(label);
    else this.seconds[kind].observe(label, seconds);
  }
}
