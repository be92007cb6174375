/**
 * The data directory is the server's alone (docs/SECURITY.md): it holds the database (every token
 * hash, every resource's password), the admin token, logs and artifacts. The directory is made
 * 0700 and what is already in it 0700 (directories) or 0600 (files), whatever the umask it was
 * made with or an earlier version left; the server's umask becomes 077, so that what it and its
 * libraries create later (SQLite's WAL, a log file) is the server's alone too. A local factory that
 * runs jobs under their own uids opens DATA and DATA/workers for traversal (0711) afterwards.
 * What other users could read before is named in a warning at start.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Whether group or others may read (a directory: list) what has `mode`. */
const readableByOthers = (mode: number): boolean => (mode & 0o044) !== 0;

/**
 * Makes `dataDir` the server's alone; returns a warning for what others could read before
 * (the directory, or entries in it), so that an operator learns what may have been seen.
 */
export function secureDataDir(dataDir: string): string[] {
  process.umask(0o077);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const warnings: string[] = [];
  const own = lstatSync(dataDir);
  if (readableByOthers(own.mode))
    warnings.push(
      `warning: data directory ${dataDir} was readable by other users (mode ${(own.mode & 0o777).toString(8).padStart(4, '0')}): made 0700`,
    );
  chmodSync(dataDir, 0o700);
  // One level down: deeper entries were made inside these, so none of them is reachable.
  const opened: string[] = [];
  for (const name of readdirSync(dataDir)) {
    const path = join(dataDir, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink()) continue;
    if (readableByOthers(stat.mode)) opened.push(name);
    chmodSync(path, stat.isDirectory() ? 0o700 : 0o600);
  }
  if (opened.length > 0)
    warnings.push(
      `warning: ${opened.length} entr${opened.length === 1 ? 'y' : 'ies'} of ${dataDir} ${opened.length === 1 ? 'was' : 'were'} readable by other users (${opened.slice(0, 5).join(', ')}${opened.length > 5 ? ', …' : ''}): made 0700 (directories) or 0600 (files)`,
    );
  return warnings;
}
