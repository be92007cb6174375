/**
 * Who a factory's jobs run as, decided once at the server's start (docs/SECURITY.md): for a local
 * factory, a uid of their own each where the server can switch users (`isolation: auto`, the
 * default, or `required`), else the server's own user — one tenant only, said at start and by
 * `berth targets`. A `required` that the machine cannot meet stops the server, naming the key.
 */
import { userInfo } from 'node:os';
import { cannotSwitchUsers } from '../agent/identity.js';
import type { Config, FactoryConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import type { UidRange } from '../domain/uid-range.js';

export interface FactoryIsolation {
  /** The uids its jobs run under; absent: they run as the server's user. */
  uids?: UidRange;
  /** One line for the start-up output and `berth targets`. */
  summary: string;
}

const serverUser = (): string => {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.geteuid?.()}`;
  }
};

export function factoryIsolation(name: string, f: FactoryConfig, file?: string): FactoryIsolation {
  switch (f.kind) {
    case 'simulated':
      return { summary: 'no job process (simulated)' };
    case 'slurm':
      return { summary: `each job is a Slurm job of the user berth submits as (${serverUser()})` };
    case 'local':
      break;
  }
  const oneTenant = `jobs run as the server's user (${serverUser()}): one tenant only`;
  if (f.isolation === 'off') return { summary: `${oneTenant} (isolation: off)` };
  const why = cannotSwitchUsers();
  if (why && f.isolation === 'required')
    throw new ConfigError(
      `factories.${name}.isolation`,
      `required, but jobs cannot run as other users: ${why}`,
      file,
    );
  if (why) return { summary: `${oneTenant}: ${why}` };
  const uids = f.jobUids!;
  return { uids, summary: `each job runs as a uid of its own (${uids.first}-${uids.last})` };
}

/** Every factory's isolation, by name. */
export function isolationOf(config: Config, file?: string): Map<string, FactoryIsolation> {
  return new Map(
    Object.entries(config.factories).map(([name, f]) => [name, factoryIsolation(name, f, file)]),
  );
}
