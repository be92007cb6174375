/**
 * Which server the CLI talks to, with which token, for which project.
 *
 * Server and token, first match wins:
 *   1. BERTH_URL with BERTH_TOKEN;
 *   2. the current context of the user's config file (`berth login`, `berth context use`);
 *   3. a local server: $BERTH_DATA_DIR, else ./.berth when it holds server.json, else the data
 *      directory of the last server this user started — its server.json URL and admin.token.
 * BERTH_TOKEN alone replaces the token of whatever server 2 or 3 found.
 *
 * HTTPS: the certificates trusted besides Node's built-in CAs are BERTH_CA's file, else the
 * context's `ca` (`berth login --ca`), else a local server's own certificate (its server.json).
 *
 * Project: --project > BERTH_PROJECT > the context's project > "default".
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { lastServerDataDir, readServerInfo, SERVER_FILE } from '../server/discovery.js';
import { ApiClient } from './client.js';
import { currentContext, isUrlContext, loadConfig, type Context, type UserConfig } from './config.js';
import { CliError } from './errors.js';
import { loadTrustFile, type TrustFile } from './trust-file.js';

/** Written by `berth server` on first start (see src/server/bootstrap.ts). */
const ADMIN_TOKEN_FILE = 'admin.token';
export const DEFAULT_PROJECT = 'default';

export interface Connection {
  url: string;
  token: string;
  source: 'env' | 'context' | 'local';
  /** Where the server came from, in words: `BERTH_URL`, `context "prod"`, `local server in DIR`. */
  origin: string;
  /** Where the token came from, in words. */
  tokenOrigin: string;
  /** The context in use (source `context`). */
  contextName?: string;
  /** The local data directory in use (a local server, or a context that names one). */
  dataDir?: string;
  project: string;
  /** `--project`, `BERTH_PROJECT`, `context "NAME"` or `default`. */
  projectOrigin: string;
  config: UserConfig;
  /** HTTPS: a CA file trusted besides the built-in CAs, and where it came from, in words. */
  ca?: TrustFile & { origin: string };
}

/**
 * `https://host:7070/` or `…/api/v1` → `https://host:7070`; undefined when it is not an
 * http(s) URL.
 */
export function normalizeUrl(input: string): string | undefined {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  url.search = '';
  url.hash = '';
  return url
    .toString()
    .replace(/\/+$/, '')
    .replace(/\/api\/v1$/, '');
}

type Server = Omit<Connection, 'project' | 'projectOrigin' | 'config' | 'ca'> & {
  /** The CA file it names (not read yet), and where from. */
  caFile?: { file: string; origin: string };
};

function readAdminToken(dataDir: string): string {
  const file = join(dataDir, ADMIN_TOKEN_FILE);
  try {
    const token = readFileSync(file, 'utf8').trim();
    if (token) return token;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    throw new CliError(`cannot read the admin token ${file}: ${why}`);
  }
  throw new CliError(`the admin token file ${file} is empty`);
}

/** A local server by data directory: its URL from server.json, its admin token from admin.token. */
export function localServer(dir: string, how: string): Server {
  const dataDir = resolve(dir);
  const info = readServerInfo(dataDir);
  if (!info || typeof info.url !== 'string') {
    throw new CliError(
      `no berth server is running in ${dataDir} (${how}; no ${SERVER_FILE}); start it with: berth server --data-dir ${dataDir}`,
    );
  }
  const origin = `local server in ${dataDir}`;
  return {
    url: info.url,
    token: readAdminToken(dataDir),
    source: 'local',
    origin,
    tokenOrigin: join(dataDir, ADMIN_TOKEN_FILE),
    dataDir,
    ...(typeof info.ca === 'string'
      ? { caFile: { file: info.ca, origin: `${origin} (its certificate)` } }
      : {}),
  };
}

/** Step 3: $BERTH_DATA_DIR, ./.berth with a server.json, the last server started. */
function discoverLocalServer(env: NodeJS.ProcessEnv): Server {
  if (env.BERTH_DATA_DIR) return localServer(env.BERTH_DATA_DIR, 'from BERTH_DATA_DIR');
  if (existsSync(join('.berth', SERVER_FILE))) return localServer('.berth', './.berth');
  const last = lastServerDataDir();
  if (last) return localServer(last, 'the last server you started');
  throw new CliError(
    'no berth server found: set BERTH_URL and BERTH_TOKEN, run `berth login --url URL --token TOKEN`, or start one with `berth server`',
  );
}

function contextServer(name: string, context: Context): Server {
  if (!isUrlContext(context)) {
    const server = localServer(context.dataDir, `context "${name}"`);
    return {
      ...server,
      source: 'context',
      origin: `context "${name}" (${server.origin})`,
      contextName: name,
    };
  }
  return {
    url: context.url,
    token: context.token,
    source: 'context',
    origin: `context "${name}"`,
    tokenOrigin: `context "${name}"`,
    contextName: name,
    ...(context.ca ? { caFile: { file: context.ca, origin: `context "${name}"` } } : {}),
  };
}

export interface ResolveOptions {
  /** --project */
  project?: string;
  env?: NodeJS.ProcessEnv;
}

export function resolveConnection(opts: ResolveOptions = {}): Connection {
  const env = opts.env ?? process.env;
  const config = loadConfig();
  let server: Server;
  let contextProject: string | undefined;
  if (env.BERTH_URL) {
    if (!env.BERTH_TOKEN)
      throw new CliError('BERTH_URL is set but BERTH_TOKEN is not; set both, or unset BERTH_URL');
    const url = normalizeUrl(env.BERTH_URL);
    if (!url) throw new CliError(`BERTH_URL: "${env.BERTH_URL}" is not an http:// or https:// URL`);
    server = {
      url,
      token: env.BERTH_TOKEN,
      source: 'env',
      origin: 'BERTH_URL',
      tokenOrigin: 'BERTH_TOKEN',
    };
  } else {
    let current = currentContext(config);
    // A local server named here and now (BERTH_DATA_DIR, or ./.berth) beats a saved context that
    // points at another local data directory: that context is usually a server since gone.
    const here = env.BERTH_DATA_DIR ?? (existsSync(join('.berth', SERVER_FILE)) ? '.berth' : undefined);
    if (
      current &&
      !isUrlContext(current.context) &&
      here &&
      resolve(here) !== resolve(current.context.dataDir)
    ) {
      current = undefined;
    }
    server = current ? contextServer(current.name, current.context) : discoverLocalServer(env);
    contextProject = current?.context.project;
    if (env.BERTH_TOKEN) server = { ...server, token: env.BERTH_TOKEN, tokenOrigin: 'BERTH_TOKEN' };
  }
  const ca = trustOf(server, env);
  const [project, projectOrigin] = opts.project
    ? [opts.project, '--project']
    : env.BERTH_PROJECT
      ? [env.BERTH_PROJECT, 'BERTH_PROJECT']
      : contextProject
        ? [contextProject, `context "${server.contextName}"`]
        : [DEFAULT_PROJECT, 'default'];
  const { caFile: _named, ...rest } = server;
  return { ...rest, project, projectOrigin, config, ...(ca ? { ca } : {}) };
}

/** BERTH_CA, else the CA file the server's context or server.json names; read now. */
function trustOf(server: Server, env: NodeJS.ProcessEnv): Connection['ca'] {
  const named = env.BERTH_CA ? { file: env.BERTH_CA, origin: 'BERTH_CA' } : server.caFile;
  if (!named) return undefined;
  return { ...loadTrustFile(named.file, named.origin), origin: named.origin };
}

export function clientFor(conn: Connection): ApiClient {
  const hint =
    conn.source === 'local' || conn.dataDir
      ? `is the server in ${conn.dataDir} still running? its ${SERVER_FILE} may be stale`
      : undefined;
  const ca = conn.ca && {
    certificates: conn.ca.certificates,
    source: `${conn.ca.file} (from ${conn.ca.origin})`,
  };
  return new ApiClient(conn.url, conn.token, {
    tokenSource: conn.tokenOrigin,
    ...(hint ? { hint } : {}),
    ...(ca ? { ca } : {}),
  });
}
