/**
 * berth.yaml: loaded once at start, validated against its schema (schema.ts), cross-checked
 * (targets name existing factories, …), its defaults filled; the factories' section is
 * factories.ts's, the targets' targets.ts's. Any problem stops the server with a ConfigError
 * naming the key.
 */
import { readFileSync } from 'node:fs';
import { resolve as resolvePath } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import { DEFAULT_MAX_ARTIFACT_FILES } from '../domain/artifact.js';
import { ConfigError } from '../domain/errors.js';
import { PRIVILEGE, PRIVILEGE_HELP } from '../domain/names.js';
import {
  ConfigSchema,
  MAX_HISTORY_SAMPLES,
  type Config,
  type RawConfig,
  type TlsConfig,
  type ArtifactsConfig,
} from './schema.js';
import { resolveFactories } from './factories.js';
import { bytesSetting, checkName, durationSetting, fromConfigDir } from './settings.js';
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
  const factories = resolveFactories(
    raw.factories,
    { cert: tls?.cert, dataDir: overrides.dataDir ?? raw.dataDir ?? DEFAULT_DATA_DIR },
    file,
  );
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
    sessions: {
      maxPerUser: raw.sessions?.maxPerUser ?? 32,
      maxPerServer: raw.sessions?.maxPerServer ?? 1024,
    },
    interactive: {
      idleTimeoutSeconds:
        durationSetting('interactive.idleTimeout', raw.interactive?.idleTimeout, file) ?? 3600,
      detachGraceSeconds:
        durationSetting('interactive.detachGrace', raw.interactive?.detachGrace, file) ?? 600,
    },
    factories,
    targets,
    resources,
    artifacts: resolveArtifacts(raw.artifacts, file),
    images: resolveImages(raw.images, file),
    logs: resolveLogs(raw.logs, file),
    queueHistory: resolveQueueHistory(raw.queueHistory, file),
    retention: resolveRetention(raw.retention, file),
    metrics: { perProject: raw.metrics?.perProject ?? false },
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

/** `images` with its defaults: DATA_DIR/images (dir null), DATA_DIR/image-layers (layersDir null), 20Gi, plain HTTP to the loopback only, a tag's digest kept 10 s. */
function resolveImages(raw: RawConfig['images'], file?: string): Config['images'] {
  return {
    dir: raw?.dir === undefined ? null : fromConfigDir(raw.dir, file),
    layersDir: raw?.layersDir === undefined ? null : fromConfigDir(raw.layersDir, file),
    cacheBytes: bytesSetting('images.cacheBytes', raw?.cacheBytes, file) ?? 20 * 2 ** 30,
    insecureRegistries: (raw?.insecureRegistries ?? []).map((r) => r.toLowerCase()),
    tagCacheSeconds: raw?.tagCacheSeconds ?? 10,
  };
}

/** `logs` with its default: 100Mi of output per run. */
function resolveLogs(raw: RawConfig['logs'], file?: string): Config['logs'] {
  return { maxBytesPerJob: bytesSetting('logs.maxBytesPerJob', raw?.maxBytesPerJob, file) ?? 100 * 2 ** 20 };
}

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
