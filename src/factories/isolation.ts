/**
 * Who a factory's jobs run as, decided once at the server's start (docs/SECURITY.md): for a local
 * factory, a uid of their own each where the server can switch users (`isolation: auto`, the
 * default, or `required`), else the server's own user — one tenant only, said at start and by
 * `berth targets`. A `required` that the machine cannot meet stops the server, naming the key.
 *
 * A slurm factory's workers are Slurm jobs of the user berth submits as. Submitted by root, each
 * worker's agent (or a direct worker's script) runs its jobs under a uid of the factory's range,
 * one per worker member, on its node; a project mapped to a user of the cluster
 * (`runAs.projects`) has its workers submitted as that user (`sbatch --uid --gid`) instead.
 */
import { userInfo } from 'node:os';
import { cannotSwitchUsers } from '../agent/identity.js';
import type { Config, FactoryConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import type { UidRange } from '../domain/uid-range.js';
import { factoryNamespaces, type FactoryNamespaces } from './namespaces.js';
import { lookupUser, type UnixUser } from './unix-users.js';

export interface FactoryIsolation {
  /**
   * The uids its jobs run under (slurm: one per worker member, on its node); absent: they run as
   * the server's user (slurm: as the user berth submits as).
   */
  uids?: UidRange;
  /** slurm: projects whose workers Slurm runs as a user of the cluster, by project. */
  users?: Map<string, UnixUser>;
  /** local: the namespaces each job gets (namespaces.ts); absent: none. */
  sandbox?: FactoryNamespaces['sandbox'];
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
      return slurmIsolation(name, f, file);
    case 'local':
      break;
  }
  const oneTenant = `jobs run as the server's user (${serverUser()}): one tenant only`;
  const why = f.isolation === 'off' ? 'isolation: off' : cannotSwitchUsers();
  if (why && f.isolation === 'required')
    throw new ConfigError(
      `factories.${name}.isolation`,
      `required, but jobs cannot run as other users: ${why}`,
      file,
    );
  if (why && f.projectUsers)
    throw new ConfigError(
      `factories.${name}.runAs.projects`,
      `jobs run as the server's user here (${why}): no project can run as another user`,
      file,
    );
  const { sandbox, summary: namespaces } = factoryNamespaces(name, f, file);
  const confined = sandbox ? { sandbox } : {};
  if (why)
    return {
      ...confined,
      summary: `${f.isolation === 'off' ? `${oneTenant} (isolation: off)` : `${oneTenant}: ${why}`}; ${namespaces}`,
    };
  const uids = f.jobUids!;
  const { users, mapped } = mappedUsers(name, f, 'this machine', file);
  return {
    uids,
    users,
    ...confined,
    summary: `each job runs as a uid of its own (${uids.first}-${uids.last})${mapped}; ${namespaces}`,
  };
}

/**
 * The users `runAs.projects` names, looked up: a ConfigError naming the key for one that is
 * unknown here or is root. `mapped` is the start line's part that names them.
 */
function mappedUsers(
  name: string,
  f: FactoryConfig,
  where: string,
  file?: string,
): { users: Map<string, UnixUser>; mapped: string } {
  const users = new Map<string, UnixUser>();
  for (const [project, user] of Object.entries(f.projectUsers ?? {})) {
    const key = `factories.${name}.runAs.projects.${project}`;
    const found = lookupUser(user);
    if (!found)
      throw new ConfigError(
        key,
        `no Unix user ${JSON.stringify(user)} here: the project's jobs run as that user, who must exist on ${where}`,
        file,
      );
    if (found.uid === 0) throw new ConfigError(key, 'must not be root', file);
    users.set(project, found);
  }
  const mapped =
    users.size === 0
      ? ''
      : `; ${[...users].map(([p, u]) => `project ${p} as ${u.name}`).join(', ')} (runAs.projects)`;
  return { users, mapped };
}

/** Every factory's isolation, by name. */
export function isolationOf(config: Config, file?: string): Map<string, FactoryIsolation> {
  return new Map(
    Object.entries(config.factories).map(([name, f]) => [name, factoryIsolation(name, f, file)]),
  );
}

/**
 * A slurm factory's: submitted by root, each worker member runs its jobs under a uid of its own
 * (the agent, root on its node, drops to it); else every job is the submitting user's.
 */
function slurmIsolation(name: string, f: FactoryConfig, file?: string): FactoryIsolation {
  const { users, mapped } = mappedUsers(name, f, 'this machine and every node', file);
  const submitter = serverUser();
  const oneTenant = `every job runs as the user berth submits as (${submitter}): one tenant only`;
  if (f.isolation === 'off') return { users, summary: `${oneTenant} (isolation: off)${mapped}` };
  const root = process.geteuid?.() === 0;
  const why = root ? undefined : `berth runs as uid ${process.geteuid?.()}, not root`;
  if (why && f.isolation === 'required')
    throw new ConfigError(
      `factories.${name}.isolation`,
      `required, but workers cannot drop to uids of their own: ${why} (Slurm runs a job as its submitter)`,
      file,
    );
  if (why) return { users, summary: `${oneTenant}: ${why}${mapped}` };
  const uids = f.jobUids!;
  return {
    uids,
    users,
    summary: `each worker runs its jobs as a uid of its own on its node (${uids.first}-${uids.last})${mapped}`,
  };
}
