/**
 * A project mapped to a named Unix user on the local factory (`runAs.projects`, docs/SECURITY.md):
 * its jobs run as that user — whose files on a shared filesystem are theirs — while other projects'
 * jobs keep uids of their own; a process a mapped job leaves is ended with its cgroup, never by
 * killing the user's every process (the user's other jobs and sessions are not the job's).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../../src/config/load.js';
import { factoryIsolation } from '../../src/factories/isolation.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { alive, jobProcesses } from '../helpers/processes.js';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { makeMappedUser, MAPPED_USER, twoTenants, type Tenants } from './tenants.js';

const asRoot = process.getuid?.() === 0;
/** Whether this machine gives each job a pids group (cgroup v1), which ends what a job left. */
const pidsCgroup = (() => {
  try {
    return /\bpids\b/.test(readFileSync('/proc/self/cgroup', 'utf8'));
  } catch {
    return false;
  }
})();
/** Whether jobs get a pid namespace of their own here, whose end ends what a job left. */
const namespacesHere = probeSandbox().available;

describe('runAs.projects on a local factory: the key', () => {
  it('names the key of a user this machine does not have', () => {
    const config = resolveConfig(
      { factories: { local: { kind: 'local', runAs: { projects: { teamb: 'no-such-user-berth' } } } } },
      {},
    );
    assert.throws(
      () => factoryIsolation('local', config.factories.local!),
      asRoot
        ? /factories\.local\.runAs\.projects\.teamb: no Unix user "no-such-user-berth" here/
        : /factories\.local\.runAs\.projects: jobs run as the server's user here/,
    );
  });
});

describe(
  'a project mapped to a Unix user',
  { skip: asRoot ? false : 'jobs run as other users only as root' },
  () => {
    let s: TestServer;
    let t: Tenants;
    before(async () => {
      makeMappedUser();
      s = await startTestServer({
        config: [
          'graceSeconds: 1',
          'heartbeatSeconds: 10',
          'factories:',
          `  local: { kind: local, capacity: 4, runAs: { projects: { teamb: ${MAPPED_USER} } } }`,
          'targets:',
          '  local: { factory: local }',
        ].join('\n'),
      });
      t = await twoTenants(s);
    });
    after(() => s?.close());

    const run = async (token: string, project: string) => {
      const job = await submit(s.api, token, project, {
        script:
          'echo "UID $(id -u) $(id -un 2>/dev/null)"; setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "LEFT $!"',
      });
      const done = await waitDone(s.api, token, job.id);
      assert.equal(done.state, 'succeeded', done.reason);
      const log = (await call(s.api, token, 'GET', `/jobs/${job.id}/logs`)).text;
      const m = /^UID (\d+) (\S*)$/m.exec(log);
      return { uid: Number(m?.[1]), user: m?.[2] ?? '', id: job.id, log };
    };

    it("runs the project's jobs as the user, and another project's under a uid of its own", async () => {
      // The user's own process, outside berth: not the job's to end.
      const id = Number(spawnSync('id', ['-u', MAPPED_USER]).stdout.toString().trim());
      const own = spawn('sleep', ['300'], { uid: id, gid: id, stdio: 'ignore' });
      try {
        const b = await run(t.bob, 'teamb');
        assert.equal(b.user, MAPPED_USER, b.log);
        assert.ok(own.pid !== undefined && alive(own.pid), "the user's other process lives on");
        // In its pid namespace, or in its cgroup: ended with the job either way.
        if (pidsCgroup || namespacesHere)
          assert.deepEqual(jobProcesses(s, b.id), [], 'what the job left is gone with it');
      } finally {
        own.kill('SIGKILL');
      }
      const a = await run(t.alice, 'teama');
      assert.notEqual(a.uid, id);
      assert.ok(a.uid >= 1000);
      assert.deepEqual(jobProcesses(s, a.id), [], 'a uid of its own: everything of it ends with the job');
      const targets = await call<{ name: string; isolation: string | null }[]>(
        s.api,
        t.bob,
        'GET',
        '/targets',
      );
      assert.match(targets.body[0]?.isolation ?? '', new RegExp(`project teamb as ${MAPPED_USER}`));
    });
  },
);
