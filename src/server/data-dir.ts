/**
 * The data directory is the server's alone (docs/SECURITY.md): it holds the database (every token
 * hash, every resource's password), the admin token, logs and artifacts. The directory is made
 * 0700 and what is already in it 0700 (directories) or 0600 (files), whatever the umask it was
 * made with or an earlier version left; the server's umask becomes 077, so that what it and its
 * libraries create later (SQLite's WAL, a log file) is the server's alone too. A local factory that
 * runs jobs under their own uids opens DATA and DATA/workers for traversal (0711) afterwards.
 */
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function secureDataDir(dataDir: string): void {
  process.umask(0o077);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  chmodSync(dataDir, 0o700);
  // One level down: deeper entries were made inside these, so none of them is reachable.
  for (const name of readdirSync(dataDir)) {
    const path = join(dataDir, name);
    const stat = lstatSync(path, { throwIfNoEntry: false });
    if (!stat || stat.isSymbolicLink()) continue;
    chmodSync(path, stat.isDirectory() ? 0o700 : 0o600);
  }
}
