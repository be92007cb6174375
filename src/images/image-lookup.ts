/**
 * A command looked up in an image's unpacked files, from outside, as execvp would inside: for an
 * image with no /bin/sh (distroless and `FROM scratch` images), where the look-up the executor
 * otherwise runs as the job, in a shell of the image's (agent/job-process.ts), cannot run.
 *
 * The files are the cache's (images/image-cache.ts): root's, never written after their unpack,
 * and read before the job runs — nothing of the job can change them meanwhile. A link is
 * followed inside the image (an absolute target from its root), never out to the host's files.
 * Execute permission is judged as for a uid that owns none of the image's files and is in none of
 * its groups: the job's.
 */
import { lstatSync, readlinkSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';

/** Why a command cannot be run, as exec says it; undefined when it can. */
export type NotFound = 'ENOENT' | 'EACCES';

/** Links followed in one look-up before it is given up (Linux's own limit). */
const MAX_LINKS = 40;

/** Where `path` (absolute, in the image) is on the host, its links followed within `rootfs`; undefined if absent. */
export function resolveInImage(rootfs: string, path: string): string | undefined {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  const done: string[] = [];
  let links = 0;
  while (parts.length > 0) {
    const part = parts.shift()!;
    if (part === '..') {
      done.pop(); // never above the image's root
      continue;
    }
    const host = join(rootfs, ...done, part);
    let st;
    try {
      st = lstatSync(host);
    } catch {
      return undefined;
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_LINKS) return undefined;
      const target = readlinkSync(host);
      parts.unshift(...target.split('/').filter((p) => p !== '' && p !== '.'));
      if (posix.isAbsolute(target)) done.length = 0;
      continue;
    }
    done.push(part);
  }
  return join(rootfs, ...done);
}

/** Whether others may execute (search, for a directory) the file at `host`. */
const othersMay = (host: string): boolean => {
  try {
    return (statSync(host).mode & 0o001) !== 0;
  } catch {
    return false;
  }
};

/** Whether the file at `path` in the image runs for the job: ENOENT, EACCES, or undefined. */
function runnable(rootfs: string, path: string): NotFound | undefined {
  const host = resolveInImage(rootfs, path);
  if (!host) return 'ENOENT';
  let st;
  try {
    st = statSync(host);
  } catch {
    return 'ENOENT';
  }
  if (!st.isFile()) return 'EACCES';
  // Each directory on the way must be searchable, the file executable, by a stranger.
  const dirs = posix.dirname(path).split('/').filter(Boolean);
  for (let i = 0; i <= dirs.length; i++) {
    const dir = resolveInImage(rootfs, `/${dirs.slice(0, i).join('/')}`);
    if (!dir || !othersMay(dir)) return 'EACCES';
  }
  return (st.mode & 0o001) !== 0 ? undefined : 'EACCES';
}

/**
 * `file` looked up as execvp does: a name with a slash is the file itself (relative to `cwd`
 * inside the image); else each directory of `path` (default `/bin:/usr/bin`) in turn, one found
 * but not runnable reported only when no later one runs.
 */
export function lookupInImage(
  rootfs: string,
  file: string,
  path: string | undefined,
  cwd = '/',
): NotFound | undefined {
  if (file === '') return 'ENOENT';
  if (file.includes('/')) return runnable(rootfs, posix.resolve(cwd, file));
  let found: NotFound = 'ENOENT';
  for (const dir of (path ?? '/bin:/usr/bin').split(':')) {
    const why = runnable(rootfs, posix.resolve(cwd, dir || '.', file));
    if (why === undefined) return undefined;
    if (why === 'EACCES') found = 'EACCES';
  }
  return found;
}
