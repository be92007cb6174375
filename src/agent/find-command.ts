/**
 * Whether a command can be run, looked up as execvp does. A job started through a wrapper (the
 * shell that joins its cgroups) would otherwise learn of a missing command only from the shell's
 * exit code 127, indistinguishable from a command that exits 127; checking first keeps the clear
 * "command not found" start failure.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { resolve } from 'node:path';

function runnable(path: string): 'ok' | 'EACCES' | 'ENOENT' {
  try {
    if (!statSync(path).isFile()) return 'EACCES';
    accessSync(path, constants.X_OK);
    return 'ok';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EACCES' ? 'EACCES' : 'ENOENT';
  }
}

/** `undefined` when `file` can be run; else the error spawning it directly would give. */
export function commandError(
  file: string,
  cwd: string,
  path: string | undefined,
): 'EACCES' | 'ENOENT' | undefined {
  if (file === '') return 'ENOENT';
  if (file.includes('/')) {
    const r = runnable(resolve(cwd, file));
    return r === 'ok' ? undefined : r;
  }
  // As execvp: an empty entry is the working directory; a file found but not runnable is
  // reported only when no later entry has a runnable one.
  let found: 'EACCES' | 'ENOENT' = 'ENOENT';
  for (const dir of (path ?? '/bin:/usr/bin').split(':')) {
    const r = runnable(resolve(cwd, dir, file));
    if (r === 'ok') return undefined;
    if (r === 'EACCES') found = 'EACCES';
  }
  return found;
}
