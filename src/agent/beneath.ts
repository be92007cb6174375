/**
 * Opening a file a job made, as root, without following anything the job controls (the rule
 * runc keeps since CVE-2019-5736 and CVE-2021-30465, the kubelet with `openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS)`): the agent reads a job's artifacts with root's rights, and a job — or
 * a daemon of it racing the agent — may swap any file or directory of its working directory for a
 * symbolic link to the admin token at any moment.
 *
 * Node has no `openat`, so each step is taken relative to the descriptor of the directory before
 * it, through `/proc/self/fd/N/NAME`: the kernel resolves `/proc/self/fd/N` to the very directory
 * the descriptor holds (not to a path looked up again), then NAME inside it, with O_NOFOLLOW so
 * that NAME is never followed when it is a link. Each directory is opened with O_DIRECTORY too,
 * and the file with O_NONBLOCK (a FIFO put in its place opens, and is refused, without waiting for
 * a writer). What is checked — a regular file, its owner, its size — is checked on the open
 * descriptor, and the bytes are read from that same descriptor: there is no second look-up by
 * name for a swap to win.
 */
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Why a name cannot be opened beneath its directory: said in the job's log. */
export class NotBeneathError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'NotBeneathError';
  }
}

/** A descriptor's own path: the kernel's link to what it holds, never a look-up by name. */
const viaDescriptor = (dir: FileHandle, name: string): string => `/proc/self/fd/${dir.fd}/${name}`;

/**
 * What the refusal means: ELOOP, a link at the end; ENOTDIR, no directory on the way — or a link
 * (O_DIRECTORY | O_NOFOLLOW on one), which one more look, for the message only, tells apart.
 */
async function stepError(e: unknown, name: string, dir?: FileHandle, step?: string): Promise<Error> {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'EMLINK') return new NotBeneathError(`${name} is a symbolic link`);
  if (code === 'ENOTDIR') {
    const link = dir && step && (await lstat(viaDescriptor(dir, step)).catch(() => undefined));
    return new NotBeneathError(
      `${name} is ${link && link.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}`,
    );
  }
  if (code === 'ENOENT') return new NotBeneathError(`${name} is gone`);
  return new NotBeneathError(`cannot open ${name} (${code ?? String(e)})`);
}

export interface OpenedFile {
  handle: FileHandle;
  /** Its size when it was opened: what is read of it. */
  size: number;
}

/**
 * Opens the regular file `name` (relative, `/`-separated) beneath the directory `root`, following
 * no symbolic link on the way or at its end, and checks it on the descriptor: a regular file, and
 * owned by `owner` when given (a hard link the job made to someone else's file is not its file).
 * The caller closes the handle. Throws NotBeneathError with the reason otherwise.
 */
export async function openBeneath(root: string, name: string, owner?: number): Promise<OpenedFile> {
  const steps = name.split('/');
  if (steps.some((s) => s === '' || s === '.' || s === '..'))
    throw new NotBeneathError('its name leads outside the working directory');
  let dir: FileHandle;
  try {
    // The working directory itself is the agent's to name (made by root in a directory of root's).
    dir = await open(root, O_RDONLY | O_DIRECTORY);
  } catch (e) {
    throw await stepError(e, 'the working directory');
  }
  try {
    for (const [i, step] of steps.slice(0, -1).entries()) {
      let next: FileHandle;
      try {
        next = await open(viaDescriptor(dir, step), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (e) {
        throw await stepError(e, steps.slice(0, i + 1).join('/'), dir, step);
      }
      await dir.close();
      dir = next;
    }
    let file: FileHandle;
    try {
      file = await open(viaDescriptor(dir, steps.at(-1)!), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (e) {
      throw await stepError(e, name);
    }
    try {
      const stat = await file.stat();
      if (!stat.isFile()) throw new NotBeneathError('not a regular file');
      if (owner !== undefined && stat.uid !== owner) throw new NotBeneathError("not the job's own file");
      return { handle: file, size: stat.size };
    } catch (e) {
      await file.close();
      throw e;
    }
  } finally {
    await dir.close();
  }
}
