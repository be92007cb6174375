/**
 * berth.yaml's `factories`: each checked against its kind (a setting another kind takes is
 * refused, naming it), its devices and GRES names, its isolation, and the uids its jobs run as —
 * a range of their own per factory — then filled with its defaults. Part of load.ts's
 * resolveConfig; any problem is a ConfigError naming the key.
 */
import { availableParallelism } from 'node:os';
import { isAbsolute, resolve as resolvePath } from 'node:path';
import { ConfigError } from '../domain/errors.js';
import { RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import { defaultUidRange, overlap, parseUidRange, rangeSize, type UidRange } from '../domain/uid-range.js';
import {
  DEFAULT_PIDS_LIMIT,
  DEFAULT_TMP_BYTES,
  SIMULATED_CAPACITY,
  type FactoryConfig,
  type RawConfig,
  type RawFactory,
} from './schema.js';
import { bytesSetting, checkName, durationSetting, fromConfigDir } from './settings.js';

/**
 * The factories of `raw` (a local one when it names none), resolved; `server` says what their
 * agents trust by default (the server's certificate) and seeds each default uid range (the data
 * directory).
 */
export function resolveFactories(
  raw: RawConfig['factories'],
  server: { cert: string | undefined; dataDir: string },
  file?: string,
): Record<string, FactoryConfig> {
  const factories: Record<string, FactoryConfig> = {};
  for (const [name, f] of Object.entries(raw ?? { local: { kind: 'local' as const } })) {
    checkName(`factories.${name}`, name, file);
    const localOnly = LOCAL_FIELDS.find((k) => f[k] !== undefined);
    if (f.kind !== 'local' && localOnly)
      throw new ConfigError(`factories.${name}.${localOnly}`, 'is for a local factory only', file);
    const slurmOnly = SLURM_FIELDS.find((k) => f[k] !== undefined);
    if (f.kind !== 'slurm' && slurmOnly)
      throw new ConfigError(`factories.${name}.${slurmOnly}`, 'is for a slurm factory only', file);
    if (f.sharedDir !== undefined && !isAbsolute(f.sharedDir))
      throw new ConfigError(
        `factories.${name}.sharedDir`,
        'must be an absolute path (the same on every node)',
        file,
      );
    for (const key of ['ca', 'workRoot', 'isolation', 'runAs'] as const)
      if (f.kind === 'simulated' && f[key] !== undefined)
        throw new ConfigError(`factories.${name}.${key}`, 'is for a local or slurm factory only', file);
    checkDeviceKinds(name, f.devices, file);
    for (const [kind, gres] of Object.entries(f.gres ?? {})) {
      if (!RESOURCE_NAME.test(kind))
        throw new ConfigError(`factories.${name}.gres.${kind}`, RESOURCE_NAME_HELP, file);
      // Slurm's GRES name, with an optional type: gpu, gpu:a100.
      if (!/^[A-Za-z][A-Za-z0-9_]*(:[A-Za-z0-9_.-]+)?$/.test(gres))
        throw new ConfigError(
          `factories.${name}.gres.${kind}`,
          `${JSON.stringify(gres)} is not a Slurm GRES name (NAME or NAME:TYPE, e.g. gpu or gpu:a100)`,
          file,
        );
    }
    const { timeLimit, runAs, tmpSize, imageCacheSize, ...rest } = f;
    const imageCacheBytes = bytesSetting(`factories.${name}.imageCacheSize`, imageCacheSize, file);
    const timeLimitSeconds = durationSetting(`factories.${name}.timeLimit`, timeLimit, file);
    // What its agents trust: its own `ca`, else the server's certificate itself (pinned).
    const ca = f.ca === undefined ? server.cert : fromConfigDir(f.ca, file);
    const capacity = f.capacity ?? (f.kind === 'simulated' ? SIMULATED_CAPACITY : availableParallelism());
    factories[name] = {
      ...rest,
      ...(f.kind !== 'simulated'
        ? {
            jobUids: jobUids(
              `factories.${name}.runAs.uids`,
              runAs?.uids,
              capacity,
              `${resolvePath(server.dataDir)}\0${name}`,
              file,
            ),
          }
        : {}),
      ...(runAs?.projects ? { projectUsers: runAs.projects } : {}),
      ...(f.kind === 'local'
        ? {
            ...wholeIsolation(name, f, file),
            pidsLimit: f.pidsLimit ?? DEFAULT_PIDS_LIMIT,
            tmpBytes: bytesSetting(`factories.${name}.tmpSize`, tmpSize, file) ?? DEFAULT_TMP_BYTES,
            // On this machine: relative to the config file, as every local path.
            ...(f.workRoot !== undefined ? { workRoot: fromConfigDir(f.workRoot, file) } : {}),
          }
        : {}),
      ...(f.kind !== 'simulated' && ca !== undefined ? { ca } : {}),
      ...(f.kind === 'slurm' ? { timeLimitSeconds: timeLimitSeconds ?? 3600 } : {}),
      ...(imageCacheBytes !== undefined ? { imageCacheBytes } : {}),
      capacity,
    };
  }
  checkUidRangesApart(factories, file);
  return factories;
}

/** Settings only a slurm factory takes. */
const SLURM_FIELDS = [
  'partition',
  'timeLimit',
  'account',
  'qos',
  'cpusPerTask',
  'sbatchArgs',
  'slurmConf',
  'imageCache',
  'imageCacheSize',
  'agentCommand',
  'pollSeconds',
  'sharedDir',
  'gres',
] as const;

/** Settings only a local factory takes. */
const LOCAL_FIELDS = ['cgroups', 'pidsLimit', 'devices', 'namespaces', 'tmpSize', 'network'] as const;

/**
 * A local factory's `isolation: required` asks for all of what keeps tenants apart (issue #38): a
 * uid per job, and cgroups and namespaces, each `required` unless set otherwise — so that a machine
 * that cannot enforce memory, cpu, pids, devices or the namespaces stops the server, naming which
 * (factories/cgroups.ts, namespaces.ts). Either turned off beside it is a contradiction, refused.
 */
function wholeIsolation(
  name: string,
  f: NonNullable<RawConfig['factories']>[string],
  file?: string,
): { cgroups?: 'required'; namespaces?: 'required' } {
  if (f.isolation !== 'required') return {};
  for (const key of ['cgroups', 'namespaces'] as const)
    if (f[key] === 'off')
      throw new ConfigError(
        `factories.${name}.${key}`,
        `off, but isolation: required asks for every protection (uids, cgroups, namespaces); use isolation: auto to run without ${key}`,
        file,
      );
  return { cgroups: 'required', namespaces: 'required' };
}

/**
 * `runAs.uids` parsed (by default a range picked from the data directory and the factory's name):
 * at least one uid per unit of the factory's capacity, since every running worker member has a
 * uid of its own.
 */
function jobUids(
  key: string,
  text: string | undefined,
  capacity: number,
  seed: string,
  file?: string,
): UidRange {
  let range: UidRange;
  try {
    range = text === undefined ? defaultUidRange(seed) : parseUidRange(text);
  } catch (e) {
    throw new ConfigError(key, (e as Error).message, file);
  }
  if (rangeSize(range) < capacity)
    throw new ConfigError(
      key,
      `has ${rangeSize(range)} uids, fewer than the factory's capacity (${capacity}): each running job needs one`,
      file,
    );
  return range;
}

/**
 * Two factories never share a uid: each ends every process of its uids (docs/SECURITY.md), and a
 * slurm factory's nodes may be this machine.
 */
function checkUidRangesApart(factories: Record<string, FactoryConfig>, file?: string): void {
  const ranged = Object.entries(factories).flatMap(([name, f]) =>
    f.jobUids ? [[name, f.jobUids] as const] : [],
  );
  for (const [i, [name, range]] of ranged.entries())
    for (const [other, theirs] of ranged.slice(0, i))
      if (overlap(range, theirs))
        throw new ConfigError(
          `factories.${name}.runAs.uids`,
          `${range.first}-${range.last} overlaps factory "${other}"'s uids (${theirs.first}-${theirs.last}): each factory needs uids of its own`,
          file,
        );
}

/** A device kind is a resource name, not one berth counts itself, and its ids are distinct. */
function checkDeviceKinds(factory: string, devices: RawFactory['devices'], file?: string): void {
  for (const [kind, spec] of Object.entries(devices ?? {})) {
    const key = `factories.${factory}.devices.${kind}`;
    if (!RESOURCE_NAME.test(kind)) throw new ConfigError(key, RESOURCE_NAME_HELP, file);
    if (['cpu', 'memory', 'jobs'].includes(kind))
      throw new ConfigError(key, `${kind} is counted by berth itself, not a device kind`, file);
    const list = Array.isArray(spec) ? spec : 'list' in spec ? spec.list : [];
    const seen = new Set<string>();
    for (const d of list) {
      if (seen.has(d.id))
        throw new ConfigError(key, `device id ${JSON.stringify(d.id)} is listed twice`, file);
      seen.add(d.id);
    }
  }
}
