/**
 * A registry login handed to skopeo for one call, as the containers tools read it: an auth file
 * (containers-auth.json, `--authfile`) in a directory of its own, the server's alone (0700, the
 * file 0600), removed when the call ends — never on a command line, where `ps` shows it, nor in
 * an environment a job could inherit.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A user name and password (or token) for one registry, in the clear for one call. */
export interface RegistryLogin {
  registry: string;
  username: string;
  password: string;
}

/** The auth file's text for `login`. */
export function authFileText(login: RegistryLogin): string {
  const auth = Buffer.from(`${login.username}:${login.password}`, 'utf8').toString('base64');
  return JSON.stringify({ auths: { [login.registry]: { auth } } });
}

/** Runs `fn` with the path of an auth file for `login` (undefined without one), removed after. */
export async function withAuthFile<T>(
  login: RegistryLogin | undefined,
  fn: (authFile: string | undefined) => Promise<T>,
): Promise<T> {
  if (!login) return fn(undefined);
  const dir = mkdtempSync(join(tmpdir(), 'berth-auth-'));
  try {
    const file = join(dir, 'auth.json');
    writeFileSync(file, authFileText(login), { mode: 0o600 });
    return await fn(file);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
