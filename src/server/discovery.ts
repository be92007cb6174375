/**
 * How a CLI on the same machine finds a local server without flags: the server writes
 * DATA/server.json with its URL, and remembers its data directory in the user's state dir.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const SERVER_FILE = 'server.json';

export interface ServerInfo {
  url: string;
  pid: number;
  dataDir: string;
  /** With HTTPS: the server's certificate file, which the local CLI trusts (agent/trust.ts). */
  ca?: string;
}

export function stateDir(): string {
  return join(process.env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'berth');
}

const lastServerFile = () => join(stateDir(), 'last-server.json');

export function announceServer(info: ServerInfo): void {
  writeFileSync(join(info.dataDir, SERVER_FILE), JSON.stringify(info) + '\n', { mode: 0o600 });
  try {
    mkdirSync(stateDir(), { recursive: true, mode: 0o700 });
    writeFileSync(lastServerFile(), JSON.stringify({ dataDir: resolve(info.dataDir) }) + '\n', {
      mode: 0o600,
    });
  } catch {
    // Discovery is a convenience; a read-only home must not stop the server.
  }
}

export function withdrawServer(dataDir: string): void {
  rmSync(join(dataDir, SERVER_FILE), { force: true });
}

export function readServerInfo(dataDir: string): ServerInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, SERVER_FILE), 'utf8')) as ServerInfo;
  } catch {
    return undefined;
  }
}

/** The data directory of the last local server this user started, if any. */
export function lastServerDataDir(): string | undefined {
  try {
    return (JSON.parse(readFileSync(lastServerFile(), 'utf8')) as { dataDir: string }).dataDir;
  } catch {
    return undefined;
  }
}
