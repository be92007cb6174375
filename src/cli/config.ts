/**
 * The user's CLI config: named contexts and which one is current, in
 * `$XDG_CONFIG_HOME/berth/config.yaml` (default `~/.config/berth/config.yaml`), mode 0600
 * because it holds tokens.
 *
 *   current: prod
 *   contexts:
 *     prod:  { url: https://berth.example.com, token: berth_…, project: ml, ca: /etc/berth/ca.pem }
 *     local: { dataDir: /home/me/work/.berth, project: default }
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { CliError } from './errors.js';

/** A remote (or any) server reached by URL with a user's token, saved by `berth login`. */
export interface UrlContext {
  url: string;
  token: string;
  project?: string;
  /** HTTPS: a PEM file (absolute path) trusted besides Node's built-in CAs (`berth login --ca`). */
  ca?: string;
}

/** A local server found through its data directory (server.json and admin.token). */
export interface LocalContext {
  dataDir: string;
  project?: string;
}

export type Context = UrlContext | LocalContext;

export interface UserConfig {
  current?: string;
  contexts: Record<string, Context>;
}

export const isUrlContext = (c: Context): c is UrlContext => 'url' in c;

export function configPath(): string {
  const base = process.env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'berth', 'config.yaml');
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function checkContext(file: string, name: string, raw: unknown): Context {
  const where = `${file}: contexts.${name}`;
  if (!isRecord(raw)) throw new CliError(`${where}: must be a mapping`);
  const str = (key: string): string | undefined => {
    const v = raw[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v === '') throw new CliError(`${where}.${key}: must be a non-empty string`);
    return v;
  };
  const project = str('project');
  const url = str('url');
  const token = str('token');
  const dataDir = str('dataDir');
  const ca = str('ca');
  const extra = project ? { project } : {};
  if (url && token) return { url, token, ...extra, ...(ca ? { ca } : {}) };
  // A local server's own certificate is trusted through its server.json.
  if (ca) throw new CliError(`${where}.ca: is for a context with url and token`);
  if (dataDir && !url && !token) return { dataDir, ...extra };
  throw new CliError(`${where}: needs either url and token, or dataDir`);
}

/** The config, or an empty one when the file does not exist. Malformed files are errors. */
export function loadConfig(file = configPath()): UserConfig {
  let source: string;
  try {
    source = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw new CliError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parse(source) as unknown;
  } catch (err) {
    throw new CliError(`${file}: invalid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (raw === null || raw === undefined) return { contexts: {} };
  if (!isRecord(raw)) throw new CliError(`${file}: must be a mapping with "current" and "contexts"`);
  if (raw.current !== undefined && raw.current !== null && typeof raw.current !== 'string') {
    throw new CliError(`${file}: current: must be a context name`);
  }
  const contexts: Record<string, Context> = {};
  if (raw.contexts !== undefined && raw.contexts !== null) {
    if (!isRecord(raw.contexts)) throw new CliError(`${file}: contexts: must be a mapping of names`);
    for (const [name, ctx] of Object.entries(raw.contexts)) contexts[name] = checkContext(file, name, ctx);
  }
  return { ...(typeof raw.current === 'string' ? { current: raw.current } : {}), contexts };
}

/** Writes atomically with mode 0600 (directory 0700): the file holds tokens. */
export function saveConfig(config: UserConfig, file = configPath()): void {
  const dir = dirname(file);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(tmp, stringify(config), { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, file);
  } catch (err) {
    throw new CliError(`cannot write ${file}: ${(err as Error).message}`);
  }
}

/** The current context and its name, if one is set. A dangling `current` is an error. */
export function currentContext(
  config: UserConfig,
  file = configPath(),
): { name: string; context: Context } | undefined {
  if (!config.current) return undefined;
  const context = config.contexts[config.current];
  if (!context) {
    throw new CliError(
      `${file}: current context "${config.current}" does not exist; pick one with: berth context use NAME`,
    );
  }
  return { name: config.current, context };
}
