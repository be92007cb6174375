/**
 * Which cgroup controllers the local factory can use on this machine, found at start: cgroup v1
 * (one hierarchy per controller) or v2 (the unified hierarchy, what every current distribution
 * boots with). A hybrid machine (v1 controllers, and a v2 hierarchy with none) is used as v1.
 *
 * v2's rule that a group with processes cannot hand controllers to its children (no internal
 * processes) means the server first moves itself out of its own group into a leaf of it,
 * `berth-server-<pid>`, as a systemd unit with `Delegate=yes` must (docs/DEPLOYMENT.md); then
 * it enables the controllers it uses down to its factories' groups (`cgroup.subtree_control`).
 */
import { createHash } from 'node:crypto';
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

export const CONTROLLERS = ['memory', 'cpu', 'pids', 'devices'] as const;
export type Controller = (typeof CONTROLLERS)[number];

export type Hierarchies =
  { usable: true; version: 1 | 2; bases: Map<Controller, string> } | { usable: false; why: string };

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
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) return detectUnified();
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
  return { usable: true, version: 1, bases };
}

/** The v2 controllers berth uses; devices are fenced by a job's own /dev there (agent/sandbox.ts). */
const V2_CONTROLLERS: readonly Controller[] = ['memory', 'cpu', 'pids'];

/**
 * cgroup v2: the server's own group (`0::/path` in /proc/self/cgroup) is the base of every
 * controller its parent hands it (`cgroup.controllers`).
 */
function detectUnified(): Hierarchies {
  const own = /^0::(.*)$/m.exec(read('/proc/self/cgroup'))?.[1] ?? '/';
  const mine = own === '/' ? CGROUP_ROOT : join(CGROUP_ROOT, own);
  const base = existsSync(mine) ? mine : CGROUP_ROOT;
  const offered = read(join(base, 'cgroup.controllers')).trim().split(/\s+/);
  const bases = new Map<Controller, string>();
  for (const c of V2_CONTROLLERS) if (offered.includes(c)) bases.set(c, base);
  if (bases.size === 0)
    return {
      usable: false,
      why: `cgroup v2: the server's group ${base} is given none of memory, cpu, pids (a systemd unit needs Delegate=yes: docs/DEPLOYMENT.md)`,
    };
  return { usable: true, version: 2, bases };
}

/**
 * cgroup v2: makes `relative` under `base` with `controllers` enabled on the way down, first
 * moving the server out of `base` when it is in it (no internal processes). Throws why not.
 */
export function makeUnifiedParent(
  base: string,
  relative: string,
  controllers: Controller[],
  keep: boolean,
): string {
  const enable = controllers.map((c) => `+${c}`).join(' ');
  const isRoot = base === CGROUP_ROOT;
  if (!isRoot && read(join(base, 'cgroup.procs')).trim() !== '') {
    const procs = read(join(base, 'cgroup.procs')).trim().split('\n').map(Number);
    const others = procs.filter((p) => p !== process.pid);
    if (others.length > 0)
      throw new Error(
        `${base} holds processes other than the server's (${others.slice(0, 3).join(', ')}${others.length > 3 ? ', …' : ''}): run berth in a group of its own (a systemd unit with Delegate=yes)`,
      );
    if (!keep) return join(base, relative); // a probe: the move is for the server that runs
    const leaf = join(base, `berth-server-${process.pid}`);
    mkdirSync(leaf, { recursive: true });
    writeFileSync(join(leaf, 'cgroup.procs'), String(process.pid));
  }
  writeFileSync(join(base, 'cgroup.subtree_control'), enable);
  let dir = base;
  for (const part of relative.split('/').filter(Boolean)) {
    dir = join(dir, part);
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o755);
    writeFileSync(join(dir, 'cgroup.subtree_control'), enable);
  }
  return dir;
}

/**
 * berth's group for one server: named by its pid, so that the groups of a server that died can be
 * told from a live one's, and by its data directory, so that two servers in one process (tests)
 * never clash.
 */
export const serverGroup = (dataDir: string): string =>
  `berth-${process.pid}-${createHash('sha256').update(dataDir).digest('hex').slice(0, 8)}`;

/** A server's group, or (v2) the leaf a server moved itself into. */
const SERVER_GROUP = /^berth-(?:(\d+)-[0-9a-f]{8}|server-(\d+))$/;

/** Whether `name` is the group of a server that is gone. A reused pid keeps it: the safe mistake. */
export function deadServerGroup(name: string): boolean {
  const m = SERVER_GROUP.exec(name);
  const pid = Number(m?.[1] ?? m?.[2] ?? 0);
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
 * any factory exists) the groups made are removed again. On v2 one group serves every controller.
 */
export function makeParents(
  found: Extract<Hierarchies, { usable: true }>,
  relative: string,
  wanted: readonly Controller[],
  keep: boolean,
): Parents {
  const { bases } = found;
  const dirs = new Map<Controller, string>();
  const refused = new Map<Controller, string>();
  if (found.version === 2) {
    const usable = wanted.filter((c) => bases.has(c));
    for (const c of wanted)
      if (!bases.has(c))
        refused.set(
          c,
          c === 'devices'
            ? 'no devices controller on v2 (namespaces fence devices)'
            : "not given to the server's group",
        );
    if (usable.length === 0) return { dirs, refused };
    const base = bases.get(usable[0]!)!;
    try {
      accessSync(base, constants.W_OK);
      const existed = existsSync(join(base, relative));
      const dir = makeUnifiedParent(base, relative, usable, keep);
      for (const c of usable) dirs.set(c, dir);
      if (!keep && !existed) removeUpTo(dir, join(base, relative.split('/')[0]!));
    } catch (e) {
      const why = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      for (const c of usable) refused.set(c, why);
    }
    return { dirs, refused };
  }
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
