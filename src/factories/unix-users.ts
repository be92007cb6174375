/**
 * Unix users by name, as the system's name service knows them (files, LDAP, SSSD: `getent`), for
 * a slurm factory's projects mapped to users of the cluster (`runAs.projects`).
 */
import { execFileSync } from 'node:child_process';

export interface UnixUser {
  name: string;
  uid: number;
  /** The user's primary group. */
  gid: number;
  home: string;
}

/** The user called `name`, or undefined if the name service knows none. */
export function lookupUser(name: string): UnixUser | undefined {
  let line: string;
  try {
    // getent exits 2 for a name it does not know.
    line = execFileSync('getent', ['passwd', '--', name], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return undefined;
  }
  const [user, , uid, gid, , home] = line.trim().split('\n')[0]!.split(':');
  if (user !== name || !/^\d+$/.test(uid ?? '') || !/^\d+$/.test(gid ?? '')) return undefined;
  return { name, uid: Number(uid), gid: Number(gid), home: home ?? '/' };
}
