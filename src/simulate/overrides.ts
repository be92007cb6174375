/** What-if changes to a scenario: "what if queue class gpu had 30 instead of 20". Pure. */
import { BadRequestError } from '../domain/errors.js';
import type { Scenario } from './scenario.js';

/** Queue class name → a new value, in whole units. */
export type ClassValues = Record<string, number>;

export type OverridableField = 'nominalQuota' | 'borrowingLimit';

export function queueClasses(cfg: Scenario): string[] {
  return [...new Set(cfg.cohorts.flatMap((c) => c.queuesSets.map((q) => q.className)))];
}

/**
 * A copy of `cfg` with `field` of every queue set of each named class replaced. Throws
 * BadRequestError for a class the scenario does not have.
 */
export function overrideQueueClasses(cfg: Scenario, field: OverridableField, values: ClassValues): Scenario {
  const known = queueClasses(cfg);
  for (const name of Object.keys(values)) {
    if (!known.includes(name)) {
      throw new BadRequestError(
        `no queue class named "${name}" in the scenario (classes: ${known.join(', ')})`,
      );
    }
  }
  return {
    ...cfg,
    cohorts: cfg.cohorts.map((c) => ({
      ...c,
      queuesSets: c.queuesSets.map((q) => {
        const value = values[q.className];
        return value === undefined ? q : { ...q, [field]: value };
      }),
    })),
  };
}
