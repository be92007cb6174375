/**
 * The two tenants of the security suites: user alice, a member (not an admin) of project teama,
 * and bob of teamb, both on the default queue.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { call, type TestServer } from '../helpers/server.js';

export interface Tenants {
  /** alice's token: a member of teama. */
  alice: string;
  /** bob's token: a member of teamb. */
  bob: string;
}

export async function twoTenants(s: TestServer): Promise<Tenants> {
  const tokens: string[] = [];
  const ok = async <T>(method: string, path: string, body: unknown): Promise<T> => {
    const r = await call<T>(s.api, s.adminToken, method, path, body);
    assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
    return r.body;
  };
  for (const [user, project] of [
    ['alice', 'teama'],
    ['bob', 'teamb'],
  ] as const) {
    tokens.push((await ok<{ token: string }>('POST', '/users', { name: user })).token);
    await ok('POST', '/projects', { name: project, clusterQueue: 'default' });
    await ok('PUT', `/projects/${project}/members/${user}`, { role: 'member' });
  }
  return { alice: tokens[0]!, bob: tokens[1]! };
}

/** A Unix user the tests map a project to (`runAs.projects`), made if it is not there (needs root). */
export const MAPPED_USER = 'berth-test-mapped';

export function makeMappedUser(): void {
  // Exit status 9: the user is there already (an earlier run).
  const made = spawnSync('useradd', ['--no-create-home', '--shell', '/usr/sbin/nologin', MAPPED_USER]);
  assert.ok(made.status === 0 || made.status === 9, `useradd: ${made.stderr.toString()}`);
}
