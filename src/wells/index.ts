/**
 * Builds the configured wells and checks what the config schema cannot: that a postgres URL is
 * usable, that exec programs exist and are executable, that no key of another kind is set.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from '../domain/errors.js';
import type { ResourceConfig } from '../config/schema.js';
import { ExecWell } from './exec.js';
import { parseAdminUrl, PostgresWell } from './postgres.js';
import { SemaphoreWell } from './semaphore.js';
import { TokenWell, type TokenMinter } from './token.js';
import type { Well } from './well.js';

export type { TokenMinter } from './token.js';
export { WellError, type InstanceRequest, type Metadata, type Well } from './well.js';

export interface WellDeps {
  /** Relative exec paths resolve against this (the config file's folder). */
  baseDir: string;
  tokens: TokenMinter;
  /** Named in ConfigError messages. */
  configFile?: string;
  /** Default prefix of postgres databases and roles, unique to this installation, so that two
   * berth installations (or test runs) sharing one PostgreSQL server never touch each other's. */
  postgresPrefix?: string;
}

/** Keys that only one kind takes. */
const KIND_KEYS = {
  url: 'postgres',
  prefix: 'postgres',
  create: 'exec',
  destroy: 'exec',
  access: 'token',
} as const;

/** The absolute path of an exec program, or a ConfigError saying why it cannot run. */
function checkProgram(key: string, program: string, baseDir: string, file?: string): string {
  const path = resolve(baseDir, program);
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw new ConfigError(key, `${path} does not exist`, file);
  }
  if (!isFile) throw new ConfigError(key, `${path} is not a file`, file);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new ConfigError(key, `${path} is not executable (chmod +x it)`, file);
  }
  return path;
}

function createWell(type: string, r: ResourceConfig, deps: WellDeps): Well {
  const key = `resources.${type}`;
  const file = deps.configFile;
  if (!Number.isInteger(r.capacity) || r.capacity < 1) {
    throw new ConfigError(`${key}.capacity`, 'must be a whole number of at least 1', file);
  }
  for (const [k, kind] of Object.entries(KIND_KEYS)) {
    if (r[k as keyof typeof KIND_KEYS] !== undefined && r.kind !== kind) {
      throw new ConfigError(`${key}.${k}`, `only ${kind} wells take ${k}; this one is ${r.kind}`, file);
    }
  }
  switch (r.kind) {
    case 'semaphore':
      return new SemaphoreWell(type, r.capacity);
    case 'token':
      return new TokenWell(type, r.capacity, deps.tokens, r.access);
    case 'postgres': {
      if (!r.url) throw new ConfigError(`${key}.url`, 'a postgres well needs url: postgres://…', file);
      try {
        parseAdminUrl(r.url);
      } catch (e) {
        throw new ConfigError(`${key}.url`, (e as Error).message, file);
      }
      const namePrefix = r.prefix ?? deps.postgresPrefix;
      return new PostgresWell({
        type,
        capacity: r.capacity,
        url: r.url,
        ...(namePrefix ? { namePrefix } : {}),
      });
    }
    case 'exec': {
      const program = (op: 'create' | 'destroy'): string => {
        const path = r[op];
        if (!path) throw new ConfigError(`${key}.${op}`, `an exec well needs a ${op} program`, file);
        return checkProgram(`${key}.${op}`, path, deps.baseDir, file);
      };
      return new ExecWell({
        type,
        capacity: r.capacity,
        create: program('create'),
        destroy: program('destroy'),
        baseDir: deps.baseDir,
      });
    }
    default:
      throw new ConfigError(`${key}.kind`, `unknown kind "${String((r as { kind: unknown }).kind)}"`, file);
  }
}

/**
 * One well per resource type, keyed by the type's name. Throws ConfigError for the first bad
 * resource type; wells made before it hold nothing yet (postgres connects on first use).
 */
export function createWells(resources: Record<string, ResourceConfig>, deps: WellDeps): Map<string, Well> {
  const wells = new Map<string, Well>();
  for (const [type, r] of Object.entries(resources)) wells.set(type, createWell(type, r, deps));
  return wells;
}
