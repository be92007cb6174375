/**
 * Who else may read or change the server's config file. The server runs as root and names the
 * file on its command line, which every job can read: a file every user may read hands its
 * passwords (the database's, a postgres well's admin URL) to any tenant's job, and one every user
 * may write lets anyone decide what the server runs. As sshd refuses a private key others can
 * read, the server refuses both at start, naming the file, its mode and the fix; a password only
 * its group may read is a warning. Pure: the caller stats the file.
 */
import type { RawConfig } from './schema.js';

export interface FileMode {
  /** st_mode's permission bits (and more: only 0o777 is looked at). */
  mode: number;
  /** Only a regular file is judged: /dev/null (an empty config) is every user's to write. */
  isFile(): boolean;
}

export interface Exposure {
  /** Why the server must not start with this file, or undefined. */
  refusal?: string;
  /** What the start lines should warn of. */
  warnings: string[];
}

const octal = (mode: number): string => (mode & 0o777).toString(8).padStart(4, '0');

/** Whether a URL (postgres://user:password@host/db) carries a password in its user part. */
export function hasPassword(url: string): boolean {
  try {
    return new URL(url).password !== '';
  } catch {
    return false; // not a URL: the store or the well refuses it, naming its key
  }
}

/** The keys of `raw` whose value holds a password: `database`, `resources.NAME.url`. */
export function passwordKeys(raw: RawConfig): string[] {
  const keys: string[] = [];
  if (raw.database !== undefined && hasPassword(raw.database)) keys.push('database');
  for (const [name, r] of Object.entries(raw.resources ?? {}))
    if (r.url !== undefined && hasPassword(r.url)) keys.push(`resources.${name}.url`);
  return keys;
}

/** What the mode of config file `file`, holding passwords at `secrets` (keys), exposes. */
export function fileExposure(file: string, stat: FileMode, secrets: string[]): Exposure {
  const mode = stat.mode & 0o777;
  const warnings: string[] = [];
  if (!stat.isFile()) return { warnings };
  if (mode & 0o002)
    return {
      refusal: `config file ${file} (mode ${octal(mode)}) is writable by every user, whose jobs could rewrite what this server runs: chmod o-w ${file}`,
      warnings,
    };
  if (secrets.length === 0) return { warnings };
  const held = `holds a password (${secrets.join(', ')})`;
  const elsewhere =
    'or keep the password out of it: $BERTH_DATABASE for the database, a PGPASSFILE the server alone reads';
  if (mode & 0o004)
    return {
      refusal: `config file ${file} (mode ${octal(mode)}) ${held} that every user can read, every job included: chmod 600 ${file} (640 for a group of admins), ${elsewhere}`,
      warnings,
    };
  if (mode & 0o040)
    warnings.push(
      `warning: config file ${file} (mode ${octal(mode)}) ${held} that its group can read: make sure no job runs with that group, or chmod 600 ${file}`,
    );
  return { warnings };
}
