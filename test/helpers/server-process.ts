/** A berth server as a real child process, for tests that kill it (kill -9) and restart it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait.js';

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  api: string;
  token: string;
  output(): string;
}

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

export async function spawnServer(dataDir: string, configFile = '/dev/null'): Promise<ServerProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      MAIN,
      'server',
      '--data-dir',
      dataDir,
      '--listen',
      '127.0.0.1:0',
      '--config',
      configFile,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const url = await waitFor(
    `server to listen (output so far: ${out})`,
    () => /listening on (http:\S+)/.exec(out)?.[1],
  );
  const token = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
  return { child, url, api: `${url}/api/v1`, token, output: () => out };
}

export async function killHard(p: ServerProcess): Promise<void> {
  const exited = new Promise((resolve) => p.child.once('exit', resolve));
  p.child.kill('SIGKILL');
  await exited;
}
