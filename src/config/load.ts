/**
 * berth.yaml: loaded once at start, validated against its schema (schema.ts), cross-checked
 * (targets name existing factories, …). Any problem stops the server with a ConfigError naming
 * the key.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { DEFAULT_MAX_ARTIFACT_FILES } from '../domain/artifact.js';
import { ConfigError } from '../domain/errors.js';
import { defaultUidRange, overlap, parseUidRange, rangeSize, type UidRange } from '../domain/uid-range.js';
import { PRIVILEGE, PRIVILEGE_HELP, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import {
  ConfigSchema,
  DEFAULT_PIDS_LIMIT,
  DEFAULT_TMP_BYTES,
  MAX_HISTORY_SAMPLES,
  SIMULATED_CAPACITY,
  type Config,
  type FactoryConfig,
  type RawConfig,
  type RawFactory,
  type TlsConfig,
  type ArtifactsConfig,
} from './schema.js';
import { bytesSetting, checkName, durationSetting } from './settings.js';
import { resolveTargets } from './targets.js';

/**
 * A token's API requests per second by default: far above what a person or a script that waits
 * for its answers makes, far below what a flood would.
 */
export const DEFAULT_REQUESTS_PER_SECOND = 1000;

/**
 * A job's token's API requests per second by default (its agent's start, heartbeats and finish
 * aside): its agent uploads output at most 50 times a second (agent/log-uploader.ts), and job code
 * that polls the API waits for its answers; a loop that does not is held to this.
 */
export const DEFAULT_JOB_REQUESTS_PER_SECOND = 100;

export const DEFAULT_LISTEN = '127.0.0.1:7070';
export const DEFAULT_DATA_DIR = './.berth';

/** `/factories/local/capacity` → `factories.local.capacity` */
const dotted = (path: string) =>
  path
    .replace(/^\//, '')
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');

export function loadConfigFile(file: string): RawConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(
      '',
      `cannot read config file: ${(e as NodeJS.ErrnoException).code ?? String(e)}`,
      file,
    );
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (e) {
    const detail = e instanceof YAMLParseError ? e.message.split('\n')[0] : String(e);
    throw new ConfigError('', `not valid YAML: ${detail}`, file);
  }
  return validateConfig(raw, file);
}

export function validateConfig(raw: unknown, file?: string): RawConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError('', 'must be a mapping of settings (key: value)', file);
  }
  const first = Value.Errors(ConfigSchema, raw).First();
  if (first) {
    const key = dotted(first.path) || '(top level)';
    const unknown = first.message.startsWith('Unexpected property');
    throw new ConfigError(key, unknown ? 'unknown key' : first.message.toLowerCase(), file);
  }
  return raw;
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

/** What `berth server`'s flags set over the file's settings. */
export interface ConfigOverrides {
  listen?: string;
  dataDir?: string;
  database?: string;
  /** --tls-cert, --tls-key: paths relative to the working directory. */
  tlsCert?: string;
  tlsKey?: string;
  /** --insecure-http */
  insecureHttp?: boolean;
  /** --rate-limit: API requests per second per token (0: none). */
  requestsPerSecond?: number;
  /** --job-rate-limit: API requests per second per job's token (0: none). */
  jobRequestsPerSecond?: number;
}

/** Fills defaults and checks the references between sections. */
export function resolveConfig(raw: RawConfig, overrides: ConfigOverrides, file?: string): Config {
  const tls = resolveTls(raw, overrides, file);
  const factories: Record<string, FactoryConfig> = {};
  for (const [name, f] of Object.entries(raw.factories ?? { local: { kind: 'local' as const } })) {
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
    const { timeLimit, runAs, tmpSize, ...rest } = f;
    const timeLimitSeconds = durationSetting(`factories.${name}.timeLimit`, timeLimit, file);
    // What its agents trust: its own `ca`, else the server's certificate itself (pinned).
    const ca = f.ca === undefined ? tls?.cert : fromConfigDir(f.ca, file);
    const capacity = f.capacity ?? (f.kind === 'simulated' ? SIMULATED_CAPACITY : availableParallelism());
    factories[name] = {
      ...rest,
      ...(f.kind !== 'simulated'
        ? {
            jobUids: jobUids(
              `factories.${name}.runAs.uids`,
              runAs?.uids,
              capacity,
              `${resolvePath(overrides.dataDir ?? raw.dataDir ?? DEFAULT_DATA_DIR)}\0${name}`,
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
      capacity,
    };
  }
  checkUidRangesApart(factories, file);
  const targets = resolveTargets(raw.targets, factories, file);
  const resources = raw.resources ?? {};
  for (const [name, r] of Object.entries(resources)) {
    checkName(`resources.${name}`, name, file);
    if (r.privilege && !PRIVILEGE.test(r.privilege))
      throw new ConfigError(`resources.${name}.privilege`, PRIVILEGE_HELP, file);
    if (r.kind === 'postgres' && !r.url)
      throw new ConfigError(`resources.${name}.url`, 'a postgres well needs url: postgres://…', file);
    if (r.kind === 'exec' && !r.create)
      throw new ConfigError(`resources.${name}.create`, 'an exec well needs a create program', file);
    if (r.kind === 'exec' && !r.destroy)
      throw new ConfigError(`resources.${name}.destroy`, 'an exec well needs a destroy program', file);
  }
  const defaultTarget = raw.defaultTarget ?? Object.keys(targets)[0] ?? 'local';
  if (!targets[defaultTarget])
    throw new ConfigError('defaultTarget', `no target named "${defaultTarget}"`, file);
  const listen = overrides.listen ?? raw.listen ?? DEFAULT_LISTEN;
  const listenKey = raw.listen === listen ? 'listen' : '--listen';
  const { host } = parseListen(listen, listenKey, file);
  const insecureHttp = overrides.insecureHttp === true || raw.insecureHttp === true;
  checkPlainHttp({ host, listenKey, tls, insecureHttp, flag: overrides.insecureHttp === true }, file);
  const publicUrl = raw.publicUrl === undefined ? null : parsePublicUrl(raw.publicUrl, file);
  if (tls && publicUrl?.startsWith('http:'))
    throw new ConfigError('publicUrl', `"${publicUrl}" is http://, but the server serves HTTPS (tls)`, file);
  const database = overrides.database ?? raw.database ?? 'sqlite';
  if (database !== 'sqlite' && !/^postgres(ql)?:\/\//.test(database)) {
    const key = overrides.database === undefined ? 'database' : '--database';
    throw new ConfigError(key, 'must be "sqlite" or a postgres:// URL', file);
  }
  const leaseSeconds = raw.leaseSeconds ?? 15;
  const renewSeconds = raw.renewSeconds ?? Math.max(1, Math.floor(leaseSeconds / 3));
  if (renewSeconds * 3 > leaseSeconds) {
    const key = raw.renewSeconds === undefined ? 'leaseSeconds' : 'renewSeconds';
    throw new ConfigError(
      key,
      `renewSeconds (${renewSeconds}) must be at most a third of leaseSeconds (${leaseSeconds})`,
      file,
    );
  }
  return {
    listen,
    tls,
    insecureHttp,
    publicUrl,
    dataDir: overrides.dataDir ?? raw.dataDir ?? DEFAULT_DATA_DIR,
    database,
    defaultTarget,
    logLevel: raw.logLevel ?? 'warn',
    heartbeatSeconds: raw.heartbeatSeconds ?? 30,
    graceSeconds: raw.graceSeconds ?? 10,
    rateLimit: {
      requestsPerSecond:
        overrides.requestsPerSecond ?? raw.rateLimit?.requestsPerSecond ?? DEFAULT_REQUESTS_PER_SECOND,
      jobRequestsPerSecond:
        overrides.jobRequestsPerSecond ??
        raw.rateLimit?.jobRequestsPerSecond ??
        DEFAULT_JOB_REQUESTS_PER_SECOND,
    },
    leaseSeconds,
    renewSeconds,
    secretKeyFile: raw.secretKeyFile === undefined ? null : fromConfigDir(raw.secretKeyFile, file),
    factories,
    targets,
    resources,
    artifacts: resolveArtifacts(raw.artifacts, file),
    images: resolveImages(raw.images, file),
    logs: resolveLogs(raw.logs, file),
    queueHistory: resolveQueueHistory(raw.queueHistory, file),
    retention: resolveRetention(raw.retention, file),
  };
}

/** `queueHistory` with its defaults: a sample every 10 s, kept 6 hours (2,160 per queue). */
function resolveQueueHistory(raw: RawConfig['queueHistory'], file?: string): Config['queueHistory'] {
  const sampleSeconds = raw?.sampleSeconds ?? 10;
  const keepSeconds = durationSetting('queueHistory.keep', raw?.keep, file) ?? 6 * 3600;
  const samples = Math.ceil(keepSeconds / sampleSeconds);
  if (samples > MAX_HISTORY_SAMPLES)
    throw new ConfigError(
      raw?.keep === undefined ? 'queueHistory.sampleSeconds' : 'queueHistory.keep',
      `keeping ${raw?.keep ?? '6h'} at one sample every ${sampleSeconds} s is ${samples} samples per queue; at most ${MAX_HISTORY_SAMPLES} are kept (sample less often or keep less)`,
      file,
    );
  if (keepSeconds < sampleSeconds)
    throw new ConfigError('queueHistory.keep', `must be at least sampleSeconds (${sampleSeconds} s)`, file);
  return { sampleSeconds, keepSeconds };
}

/** `artifacts` with its defaults: DATA_DIR/artifacts (dir null), 100Mi and 1000 files per run, kept 30 days. */
function resolveArtifacts(raw: RawConfig['artifacts'], file?: string): ArtifactsConfig {
  return {
    dir: raw?.dir === undefined ? null : fromConfigDir(raw.dir, file),
    maxBytesPerJob: bytesSetting('artifacts.maxBytesPerJob', raw?.maxBytesPerJob, file) ?? 100 * 2 ** 20,
    maxFilesPerJob: raw?.maxFilesPerJob ?? DEFAULT_MAX_ARTIFACT_FILES,
    retentionSeconds: durationSetting('artifacts.retention', raw?.retention, file) ?? 30 * 86_400,
  };
}

/** `images` with its defaults: DATA_DIR/images (dir null), 20Gi, plain HTTP to the loopback only, a tag's digest kept 10 s. */
function resolveImages(raw: RawConfig['images'], file?: string): Config['images'] {
  return {
    dir: raw?.dir === undefined ? null : fromConfigDir(raw.dir, file),
    cacheBytes: bytesSetting('images.cacheBytes', raw?.cacheBytes, file) ?? 20 * 2 ** 30,
    insecureRegistries: (raw?.insecureRegistries ?? []).map((r) => r.toLowerCase()),
    tagCacheSeconds: raw?.tagCacheSeconds ?? 10,
  };
}

/** `logs` with its default: 100Mi of output per run. */
function resolveLogs(raw: RawConfig['logs'], file?: string): Config['logs'] {
  return { maxBytesPerJob: bytesSetting('logs.maxBytesPerJob', raw?.maxBytesPerJob, file) ?? 100 * 2 ** 20 };
}

/** A path in berth.yaml, relative to the file's folder (as for exec wells' programs). */
const fromConfigDir = (path: string, file?: string): string => resolvePath(file ? dirname(file) : '.', path);

/** tls from the file, each of its paths replaceable by a flag; both or neither. */
function resolveTls(raw: RawConfig, o: ConfigOverrides, file?: string): TlsConfig | null {
  const cert =
    o.tlsCert !== undefined ? resolvePath(o.tlsCert) : raw.tls && fromConfigDir(raw.tls.cert, file);
  const key = o.tlsKey !== undefined ? resolvePath(o.tlsKey) : raw.tls && fromConfigDir(raw.tls.key, file);
  const keys = {
    cert: o.tlsCert !== undefined ? '--tls-cert' : 'tls.cert',
    key: o.tlsKey !== undefined ? '--tls-key' : 'tls.key',
  };
  if (cert === undefined && key === undefined) return null;
  if (cert === undefined) throw new ConfigError('--tls-key', 'needs a certificate too: --tls-cert', file);
  if (key === undefined) throw new ConfigError('--tls-cert', 'needs its private key too: --tls-key', file);
  return { cert, key, keys };
}

/** Whether `host` (a listening address) is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  return (
    host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host) || /^::ffff:127\./i.test(host)
  );
}

/**
 * Plain HTTP beyond the loopback carries tokens in the clear: allowed only when asked for by name.
 * insecureHttp with tls is a contradiction, refused rather than guessed at.
 */
function checkPlainHttp(
  s: { host: string; listenKey: string; tls: TlsConfig | null; insecureHttp: boolean; flag: boolean },
  file?: string,
): void {
  const setting = s.flag ? '--insecure-http' : 'insecureHttp';
  if (s.tls && s.insecureHttp)
    throw new ConfigError(setting, 'is for a server without tls (it serves HTTPS)', file);
  if (!s.tls && !s.insecureHttp && !isLoopback(s.host))
    throw new ConfigError(
      s.listenKey,
      `${s.host} is not a loopback address: serve HTTPS with tls: {cert, key} (--tls-cert, --tls-key), or allow plain HTTP with insecureHttp: true (--insecure-http)`,
      file,
    );
}

/** An http(s) URL without a trailing slash. */
function parsePublicUrl(text: string, file?: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash)
    throw new ConfigError(
      'publicUrl',
      `"${text}" must be an http:// or https:// URL, e.g. http://head-node:7070`,
      file,
    );
  return text.replace(/\/+$/, '');
}

/** "127.0.0.1:7070", ":7070", "[::1]:0" → host and port. */
export function parseListen(listen: string, key = 'listen', file?: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535)
    throw new ConfigError(
      key,
      `"${listen}" must be HOST:PORT, e.g. 127.0.0.1:7070 (port 0 picks a free port)`,
      file,
    );
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}

// --- retention ---

const YEAR_SECONDS = 365 * 86_400;

/** A retention period: `forever` (null), `2y` (365 days a year), or a duration (`90d`, seconds). */
function retentionSetting(key: string, value: string | number | undefined, fallback: number, file?: string) {
  if (value === undefined) return fallback;
  if (value === 'forever') return null;
  const years = typeof value === 'string' ? /^\s*(\d+)y\s*$/.exec(value) : null;
  if (years) {
    if (Number(years[1]) === 0)
      throw new ConfigError(key, `"${value}" must be at least 1s, or forever`, file);
    return Number(years[1]) * YEAR_SECONDS;
  }
  try {
    return durationSetting(key, value, file)!;
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError(key, `"${value}" is not a retention (90d, 1y, 12h, seconds, or forever)`, file);
  }
}

/** `retention` with its defaults: jobs 90 days, the audit log a year, the ledger's allocations 90 days. */
function resolveRetention(raw: RawConfig['retention'], file?: string): Config['retention'] {
  return {
    jobs: retentionSetting('retention.jobs', raw?.jobs, 90 * 86_400, file),
    audit: retentionSetting('retention.audit', raw?.audit, YEAR_SECONDS, file),
    ledger: retentionSetting('retention.ledger', raw?.ledger, 90 * 86_400, file),
  };
}
