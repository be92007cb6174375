/**
 * Which cgroup controllers the local factory can use on this machine, found at start: cgroup v1
 * (one hierarchy per controller, as here) is supported; v2 (the unified hierarchy) is reported as
 * not supported yet — its rule that a group with processes cannot hand controllers to its
 * children means the server would first have to move itself out of its own group.
 */
import { createHash } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, rmdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const CONTROLLERS = ['memory', 'cpu', 'pids', 'devices'] as const;
export type Controller = (typeof CONTROLLERS)[number];

export type Hierarchies = { usable: true; bases: Map<Controller, string> } | { usable: false; why: string };

const CGROUP_ROOT = '/sys/fs/cgroup';

/** `/proc/self/mounts` escapes spaces and the like as octal (`\040`). */
const unescape = (s: string) =>
  s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));

function read(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Where each v1 controller's hierarchy is mounted, and the server's own group in it: berth's
 * groups go under the server's own, so a limit an administrator (or systemd) set on the server
 * still covers its jobs. In a container that mounts only its own subtree, the group named in
 * /proc/self/cgroup does not exist under the mount, and the mount itself is the server's group.
 */
export function detectHierarchies(): Hierarchies {
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers')))
    return { usable: false, why: 'cgroup v2 (the unified hierarchy) is not supported yet' };
  const mounts = new Map<Controller, string>();
  for (const line of read('/proc/self/mounts').split('\n')) {
    const [, dir, type, options] = line.split(' ');
    if (type !== 'cgroup' || !dir || !options) continue;
    const names = options.split(',');
    for (const c of CONTROLLERS) if (names.includes(c) && !mounts.has(c)) mounts.set(c, unescape(dir));
  }
  if (mounts.size === 0)
    return { usable: false, why: 'no cgroup v1 memory, cpu, pids or devices controller is mounted' };
  const own = new Map<Controller, string>();
  for (const line of read('/proc/self/cgroup').split('\n')) {
    const [, names = '', ...path] = line.split(':');
    for (const c of CONTROLLERS) if (names.split(',').includes(c)) own.set(c, path.join(':'));
  }
  const bases = new Map<Controller, string>();
  for (const [c, dir] of mounts) {
    const mine = join(dir, own.get(c) ?? '/');
    bases.set(c, existsSync(mine) ? mine : dir);
  }
  return { usable: true, bases };
}

/**
 * berth's group for one server: named by its pid, so that the groups of a server that died can be
 * told from a live one's, and by its data directory, so that two servers in one process (tests)
 * never clash.
 */
export const serverGroup = (dataDir: string): string =>
  `berth-${process.pid}-${createHash('sha256').update(dataDir).digest('hex').slice(0, 8)}`;

const SERVER_GROUP = /^berth-(\d+)-[0-9a-f]{8}$/;

/** Whether `name` is the group of a server that is gone. A reused pid keeps it: the safe mistake. */
export function deadServerGroup(name: string): boolean {
  const pid = Number(SERVER_GROUP.exec(name)?.[1] ?? 0);
  if (pid === 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

export interface Parents {
  /** The factory's parent group in each controller it can use. */
  dirs: Map<Controller, string>;
  /** Why each other wanted controller cannot be used. */
  refused: Map<Controller, string>;
}

/**
 * Makes the factory's parent group in each `wanted` controller, or says why it cannot: the test
 * that a controller is usable is making a group in it. With `keep: false` (a probe at start, before
 * any factory exists) the groups made are removed again.
 */
export function makeParents(
  bases: Map<Controller, string>,
  relative: string,
  wanted: readonly Controller[],
  keep: boolean,
): Parents {
  const dirs = new Map<Controller, string>();
  const refused = new Map<Controller, string>();
  for (const c of wanted) {
    const base = bases.get(c);
    if (!base) {
      refused.set(c, 'not mounted');
      continue;
    }
    const dir = join(base, relative);
    try {
      // First, for its clear error (EROFS, EACCES): a recursive mkdir reports ENOENT for those.
      accessSync(base, constants.W_OK);
      const made = mkdirSync(dir, { recursive: true });
      // Searchable by all, whatever the server's umask (077): a job under its own uid opens its
      // group's cgroup.procs below these to join it (cgroups.ts).
      if (made) for (let d = dir; d.length >= made.length; d = dirname(d)) chmodSync(d, 0o755);
      accessSync(dir, constants.W_OK);
      dirs.set(c, dir);
      if (!keep && made) removeUpTo(dir, made);
    } catch (e) {
      refused.set(c, (e as NodeJS.ErrnoException).code ?? String(e));
    }
  }
  return { dirs, refused };
}

/** Removes `dir` and its parents up to `top` (the first one mkdir made), while they are empty. */
export function removeUpTo(dir: string, top: string): void {
  for (let d = dir; d.startsWith(top); d = join(d, '..')) {
    try {
      rmdirSync(d);
    } catch {
      return; // not empty (another factory's, a job's): kept
    }
  }
}
