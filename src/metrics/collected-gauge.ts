/**
 * A gauge whose series are made afresh at each scrape from what the server holds in memory: its
 * old series are dropped first, so a queue, factory or state that is gone leaves no stale value.
 */
import { Gauge, type Registry } from 'prom-client';

export type SetSample<L extends string> = (labels: Record<L, string>, value: number) => void;

export function collectedGauge<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  labelNames: L[],
  fill: (set: SetSample<L>) => void,
): Gauge<L> {
  return new Gauge<L>({
    name,
    help,
    labelNames,
    registers,
    collect() {
      this.reset();
      fill((labels, value) => this.set(labels as Partial<Record<L, string>>, value));
    },
  });
}
