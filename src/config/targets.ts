/**
 * The `targets` section: each target names a factory; pilot workers (`reuse`) need a slurm
 * factory whose workers run berth's agent; a target's `defaultTimeout` is the timeout of its jobs
 * that give none, its `defaultRequests` their requests of what they name none of, its
 * `maxRequests` the most they may ask.
 */
import { formatSpan } from '../domain/duration.js';
import { ConfigError } from '../domain/errors.js';
import { JOBS_RESOURCE } from '../domain/cluster-queue.js';
import { PRIVILEGE, PRIVILEGE_HELP, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import { formatAmount } from '../domain/quantity.js';
import type { FactoryConfig, RawConfig, TargetConfig } from './schema.js';
import { checkName, durationSetting, quantitySetting } from './settings.js';
import {
  formatImageReference,
  ImageReferenceError,
  parseImageReference,
  registryRefusal,
  type ImageReference,
} from '../images/reference.js';

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
    const { idleTimeout, defaultTimeout, defaultRequests, maxRequests, ...rest } = t;
    const requests = requestBounds(name, defaultRequests, maxRequests, file);
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
      ...targetImages(name, t, factory, file),
      ...(t.reuse ? { idleTimeoutSeconds: idleTimeoutSeconds ?? 300 } : {}),
      ...(defaultTimeoutSeconds !== undefined ? { defaultTimeoutSeconds } : {}),
      ...requests,
    };
  }
  return targets;
}

/**
 * A target's `image` and `registries`, checked: images run on a local factory's workers and a
 * slurm factory's agents (docs/IMAGES.md), not on simulated workers nor a slurm factory's direct
 * ones (no agent on the node to pull them); its image is a reference (written out in full) from a
 * registry it allows.
 */
function targetImages(
  target: string,
  t: NonNullable<RawConfig['targets']>[string],
  factory: FactoryConfig,
  file?: string,
): Pick<TargetConfig, 'image' | 'registries'> {
  const out: Pick<TargetConfig, 'image' | 'registries'> = {};
  if (t.registries !== undefined) out.registries = t.registries.map((r) => r.trim().toLowerCase());
  if (t.image === undefined) return out;
  const key = `targets.${target}.image`;
  const why = imagesUnsupported(t.factory, factory);
  if (why) throw new ConfigError(key, why, file);
  let ref: ImageReference;
  try {
    ref = parseImageReference(t.image);
  } catch (e) {
    throw new ConfigError(key, e instanceof ImageReferenceError ? e.message : String(e), file);
  }
  const refused = registryRefusal(ref, out.registries, target);
  if (refused) throw new ConfigError(key, refused, file);
  out.image = formatImageReference(ref);
  return out;
}

/**
 * A target's `defaultRequests` and `maxRequests`, checked: resource names and quantities, each
 * default within its maximum; a maximum's resource with no default defaults to the maximum (a job
 * that asked for nothing is then held to it too).
 */
function requestBounds(
  target: string,
  defaults: Record<string, string | number> | undefined,
  maxima: Record<string, string | number> | undefined,
  file?: string,
): Pick<TargetConfig, 'defaultRequests' | 'maxRequests'> {
  const amount = (key: string, resource: string, value: string | number): number => {
    const where = `targets.${target}.${key}.${resource}`;
    if (!RESOURCE_NAME.test(resource)) throw new ConfigError(where, RESOURCE_NAME_HELP, file);
    if (resource === JOBS_RESOURCE)
      throw new ConfigError(where, 'every job requests jobs: 1; leave it out', file);
    return quantitySetting(where, resource, value, file);
  };
  const out: Pick<TargetConfig, 'defaultRequests' | 'maxRequests'> = {};
  if (maxima !== undefined && Object.keys(maxima).length > 0) {
    out.maxRequests = {};
    for (const [resource, value] of Object.entries(maxima))
      out.maxRequests[resource] = amount('maxRequests', resource, value);
  }
  const given: Record<string, string> = {};
  for (const [resource, value] of Object.entries(defaults ?? {})) {
    const wanted = amount('defaultRequests', resource, value);
    const max = out.maxRequests?.[resource];
    if (max !== undefined && wanted > max)
      throw new ConfigError(
        `targets.${target}.defaultRequests.${resource}`,
        `${String(value)} is more than its maximum (maxRequests.${resource}: ${formatAmount(resource, max)})`,
        file,
      );
    given[resource] = typeof value === 'number' ? String(value) : value.trim();
  }
  for (const [resource, max] of Object.entries(out.maxRequests ?? {}))
    given[resource] ??= formatAmount(resource, max);
  if (Object.keys(given).length > 0) out.defaultRequests = given;
  return out;
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

/** Why factory `name`'s workers cannot run a job in an image, whatever the machine; undefined: they can. */
export function imagesUnsupported(name: string, f: FactoryConfig): string | undefined {
  if (f.kind === 'simulated') return `its factory "${name}" (simulated) runs no processes`;
  if (f.kind === 'slurm' && f.sharedDir !== undefined)
    return `its factory "${name}" (slurm) runs jobs without an agent (sharedDir), and images need one on the node`;
  return undefined;
}
