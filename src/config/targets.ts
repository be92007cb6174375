/**
 * The `targets` section: each target names a factory; pilot workers (`reuse`) need a slurm
 * factory whose workers run berth's agent; a target's `defaultTimeout` is the timeout of its jobs
 * that give none.
 */
import { formatSpan } from '../domain/duration.js';
import { ConfigError } from '../domain/errors.js';
import { PRIVILEGE, PRIVILEGE_HELP } from '../domain/names.js';
import type { FactoryConfig, RawConfig, TargetConfig } from './schema.js';
import { checkName, durationSetting } from './settings.js';

/** Every target, checked against the factories; with none configured, `local` on the local factory. */
export function resolveTargets(
  raw: RawConfig['targets'],
  factories: Record<string, FactoryConfig>,
  file?: string,
): Record<string, TargetConfig> {
  const targets: Record<string, TargetConfig> = {};
  for (const [name, t] of Object.entries(raw ?? (factories.local ? { local: { factory: 'local' } } : {}))) {
    checkName(`targets.${name}`, name, file);
    const factory = factories[t.factory];
    if (!factory) throw new ConfigError(`targets.${name}.factory`, `no factory named "${t.factory}"`, file);
    if (t.privilege && !PRIVILEGE.test(t.privilege))
      throw new ConfigError(`targets.${name}.privilege`, PRIVILEGE_HELP, file);
    // Pilots need agents that ask for their next job: those of factories whose agents register.
    if (t.reuse && factory.kind !== 'slurm')
      throw new ConfigError(`targets.${name}.reuse`, 'is for a target of a slurm factory only', file);
    if (t.reuse && factory.sharedDir !== undefined)
      throw new ConfigError(
        `targets.${name}.reuse`,
        `pilots need berth agent: factory "${t.factory}" runs jobs without one (sharedDir)`,
        file,
      );
    if (t.idleTimeout !== undefined && !t.reuse)
      throw new ConfigError(`targets.${name}.idleTimeout`, 'is for a target with reuse: true only', file);
    const { idleTimeout, defaultTimeout, ...rest } = t;
    const idleTimeoutSeconds = durationSetting(`targets.${name}.idleTimeout`, idleTimeout, file);
    const defaultTimeoutSeconds = durationSetting(`targets.${name}.defaultTimeout`, defaultTimeout, file);
    const limit = factory.timeLimitSeconds;
    if (defaultTimeoutSeconds !== undefined && limit !== undefined && defaultTimeoutSeconds > limit)
      throw new ConfigError(
        `targets.${name}.defaultTimeout`,
        `${formatSpan(defaultTimeoutSeconds * 1000, 2)} is longer than factory "${t.factory}" lets a worker run (timeLimit ${formatSpan(limit * 1000, 2)})`,
        file,
      );
    targets[name] = {
      ...rest,
      ...(t.reuse ? { idleTimeoutSeconds: idleTimeoutSeconds ?? 300 } : {}),
      ...(defaultTimeoutSeconds !== undefined ? { defaultTimeoutSeconds } : {}),
    };
  }
  return targets;
}

/**
 * What the server says at start about its targets: a pilot target whose jobs may come without a
 * timeout, which never run on a pilot (nothing says they end before it does).
 */
export function targetWarnings(targets: Record<string, TargetConfig>): string[] {
  return Object.entries(targets)
    .filter(([, t]) => t.reuse && t.defaultTimeoutSeconds === undefined)
    .map(
      ([name]) =>
        `target "${name}": reuse: true, but jobs submitted without a timeout never run on a pilot; set targets.${name}.defaultTimeout to give them one`,
    );
}
