/**
 * Removing a job's working directory as root without following anything the job controls, as
 * systemd removes a `PrivateTmp` directory: a job (or a daemon of it, racing the clean-up) may
 * turn any subdirectory into a symbolic link to a directory of root's, and a removal that walks by
 * path — lstat, then readdir and unlink by name — then deletes root's files.
 *
 * Every step here is relative to the descriptor of a directory already open (agent/beneath.ts's
 * `/proc/self/fd/N/NAME`): an entry is unlinked by its name in that directory (unlink and rmdir
 * never follow their last component), and a subdirectory is entered only by opening it with
 * O_DIRECTORY | O_NOFOLLOW — a link put in its place is refused, and unlinked as a link.
 *
 * Depth is bounded by descriptors, not by the tree: past MAX_DEPTH a subdirectory is moved up to
 * the top directory (a rename within it) and removed from there, so that a job's million nested
 * directories cost a million renames, not a million open descriptors.
 */
import { constants } from 'node:fs';
import { open, readdir, rename, rmdir, unlink, type FileHandle } from 'node:fs/promises';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

/** How many directories are held open at once, at most. */
const MAX_DEPTH = 32;
/** How often one entry is tried again when it changes kind under the removal (a swap). */
const TRIES = 4;

const at = (dir: FileHandle, name: string): string => `/proc/self/fd/${dir.fd}/${name}`;
const code = (e: unknown): string | undefined => (e as NodeJS.ErrnoException).code;

/** What a removal left: the entries it could not remove, and why (for the server's output). */
export interface Removal {
  left: string[];
}

/**
 * Removes `dir` and everything in it (everything in it only, with `keep`: a pilot's directory
 * between two jobs), following no link, and resolves what it could not remove. A directory that
 * is already gone is fine.
 */
export async function removeBeneath(dir: string, keep = false): Promise<Removal> {
  const left: string[] = [];
  let top: FileHandle;
  try {
    top = await open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (e) {
    if (code(e) === 'ENOENT') return { left };
    if (code(e) === 'ENOTDIR' || code(e) === 'ELOOP') {
      // Not a directory (any more): the name itself goes, never what it leads to.
      await unlink(dir).catch(() => {});
      return { left };
    }
    return { left: [`${dir} (${code(e) ?? String(e)})`] };
  }
  let moved = 0;
  try {
    // Subdirectories moved up from too deep land here, so the top is emptied until it stays so.
    for (let pass = 0; pass < 1_000_000; pass++) {
      const before = moved;
      await empty(top, 0, {
        top,
        left,
        moveUp: async (parent, name) => {
          const to = `.berth-deep-${moved++}`;
          await rename(at(parent, name), at(top, to));
        },
      });
      if (moved === before) break;
    }
  } finally {
    await top.close();
  }
  if (keep) return { left };
  try {
    await rmdir(dir);
  } catch (e) {
    if (code(e) !== 'ENOENT') left.push(`${dir} (${code(e) ?? String(e)})`);
  }
  return { left };
}

interface Walk {
  top: FileHandle;
  left: string[];
  moveUp: (parent: FileHandle, name: string) => Promise<void>;
}

/** Removes every entry of the open directory `dir`. */
async function empty(dir: FileHandle, depth: number, walk: Walk): Promise<void> {
  let names: string[];
  try {
    names = await readdir(`/proc/self/fd/${dir.fd}`);
  } catch (e) {
    walk.left.push(`a directory (${code(e) ?? String(e)})`);
    return;
  }
  for (const name of names) await removeEntry(dir, name, depth, walk);
}

async function removeEntry(dir: FileHandle, name: string, depth: number, walk: Walk): Promise<void> {
  for (let attempt = 0; attempt < TRIES; attempt++) {
    try {
      await unlink(at(dir, name)); // a file, a link, a FIFO, a socket: the name goes
      return;
    } catch (e) {
      if (code(e) === 'ENOENT') return;
      if (code(e) !== 'EISDIR' && code(e) !== 'EPERM') {
        walk.left.push(`${name} (${code(e) ?? String(e)})`);
        return;
      }
    }
    if (depth + 1 >= MAX_DEPTH) {
      await walk.moveUp(dir, name).catch((e: unknown) => walk.left.push(`${name} (${code(e)})`));
      return;
    }
    let sub: FileHandle;
    try {
      sub = await open(at(dir, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (e) {
      if (code(e) === 'ENOENT') return;
      if (code(e) === 'ENOTDIR' || code(e) === 'ELOOP') continue; // swapped for a link: unlink it
      walk.left.push(`${name} (${code(e) ?? String(e)})`);
      return;
    }
    try {
      await empty(sub, depth + 1, walk);
    } finally {
      await sub.close();
    }
    try {
      await rmdir(at(dir, name));
      return;
    } catch (e) {
      if (code(e) === 'ENOENT') return;
      if (code(e) === 'ENOTDIR') continue; // swapped for a link after it was emptied
      if (code(e) !== 'ENOTEMPTY' || attempt === TRIES - 1) {
        walk.left.push(`${name} (${code(e) ?? String(e)})`);
        return;
      }
    }
  }
  walk.left.push(`${name} (it kept changing)`);
}
