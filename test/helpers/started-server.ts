/**
 * A real server on a config of its own that keeps the lines it printed at start (the shared
 * helper, server.ts, drops them), and the local factory's record of each job's cgroups: what the
 * cgroup suites (test/jobs/enforce.test.ts on v1, test/security/cgroup-v2.test.ts) look at.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalFactory } from '../../src/factories/local.js';
import { startServer, type RunningServer } from '../../src/server/run.js';
import { call } from './server.js';
import type { JobView } from './jobs.js';
import { scratchDir } from './scratch.js';
import { serverDatabase } from './store.js';

export interface Started {
  server: RunningServer;
  api: string;
  token: string;
  dataDir: string;
  /** What the server printed at start. */
  lines: string[];
  close(): Promise<void>;
}

/** A real server on `config`, keeping its start lines (the shared helper drops them). */
export async function start(config: string): Promise<Started> {
  const dataDir = scratchDir('berth-enforce-');
  const configFile = join(dataDir, 'berth.yaml');
  writeFileSync(configFile, config);
  const database = await serverDatabase(dataDir);
  const lines: string[] = [];
  const server = await startServer({
    dataDir,
    listen: '127.0.0.1:0',
    configFile,
    database: database?.url,
    print: (line) => lines.push(line),
  });
  return {
    server,
    api: `${server.url}/api/v1`,
    token: readFileSync(join(dataDir, 'admin.token'), 'utf8').trim(),
    dataDir,
    lines,
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

export const localConfig = (extra = '') =>
  [
    'graceSeconds: 1',
    'heartbeatSeconds: 10',
    'factories:',
    `  local: { kind: local, capacity: 4${extra} }`,
    'targets:',
    '  local: { factory: local }',
  ].join('\n');

export const logs = async (s: Started, id: number) =>
  (await call(s.api, s.token, 'GET', `/jobs/${id}/logs`)).text;

/** The job's groups, from the factory's own record, once its worker exists. */
export function groupsOf(s: Started, job: JobView): string[] {
  const factory = s.server.factories.get('local');
  assert.ok(factory instanceof LocalFactory);
  return job.worker ? factory.cgroupDirs(job.worker.id) : [];
}
