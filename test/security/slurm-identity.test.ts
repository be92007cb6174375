/**
 * Who a tenant's code runs as on Slurm (docs/SECURITY.md, "Slurm"), on the real cluster of
 * scripts/slurm: berth submits as root (as CI and a real installation run it), so each worker's
 * jobs run under a uid of the factory's own on the node — a pilot's agent and a direct worker's
 * script drop to it — and every process a job leaves (setsid) is ended with the job, before a
 * pilot's next job; a project mapped to a Unix user of the cluster (`runAs.projects`) runs as
 * that user (`sbatch --uid --gid`).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { submit, waitDone } from '../helpers/jobs.js';
import { alive, jobProcesses } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { makeMappedUser, MAPPED_USER, twoTenants } from './tenants.js';

/** A Unix user of the "cluster" (this machine), made by the test: what teamb maps to. */
const MAPPED = MAPPED_USER;

const asRoot = process.getuid?.() === 0;
const skip =
  slurmSkip() ||
  (asRoot ? false : 'a worker drops to a uid of its own only when berth submits as root: run as root');

/** What each job prints: its uid and user name, a process it leaves behind, what it could read. */
const PROBE = (dataDir: string) =>
  [
    'echo "UID $(id -u) $(id -un 2>/dev/null)"',
    'setsid sleep 300 </dev/null >/dev/null 2>&1 & echo "LEFT $!"',
    `cat ${dataDir}/admin.token >/dev/null 2>&1 && echo TOKEN-READ || echo TOKEN-DENIED`,
    'cat /proc/$PPID/environ >/dev/null 2>&1 && echo ENVIRON-READ || echo ENVIRON-DENIED',
  ].join('; ');

function probed(log: string): { uid: number; user: string; left: number; token: string; environ: string } {
  const m = /^UID (\d+) ?(.*)$/m.exec(log);
  return {
    uid: Number(m?.[1] ?? -1),
    user: m?.[2] ?? '',
    left: Number(/^LEFT (\d+)$/m.exec(log)?.[1] ?? -1),
    token: /^TOKEN-\w+$/m.exec(log)?.[0] ?? '',
    environ: /^ENVIRON-\w+$/m.exec(log)?.[0] ?? '',
  };
}

describe('Slurm workers run tenants under identities of their own', { skip }, () => {
  let s: TestServer;
  const tokens: Record<string, string> = {};
  const shared = scratchDir('berth-slurm-identity-');
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    makeMappedUser();
    s = await startTestServer({
      config: [
        'graceSeconds: 2',
        'heartbeatSeconds: 120',
        'defaultTarget: pilot',
        'factories:',
        '  pilots: { kind: slurm, partition: main, capacity: 1, timeLimit: 2m, pollSeconds: 0.5 }',
        `  direct: { kind: slurm, partition: main, capacity: 2, timeLimit: 2m, pollSeconds: 0.5, sharedDir: ${shared}, runAs: { projects: { teamb: ${MAPPED} } } }`,
        'targets:',
        '  pilot: { factory: pilots, reuse: true, idleTimeout: 20s, defaultTimeout: 30s }',
        '  direct: { factory: direct }',
      ].join('\n'),
    });
    Object.assign(tokens, await twoTenants(s));
  });
  after(async () => {
    await s?.close();
    rmSync(shared, { recursive: true, force: true });
  });

  const run = async (user: string, project: string, target: string) => {
    const job = await submit(s.api, tokens[user]!, project, { script: PROBE(s.dataDir), target });
    const done = await waitDone(s.api, tokens[user]!, job.id, 60_000);
    assert.equal(done.state, 'succeeded', done.reason);
    const log = (await call(s.api, tokens[user], 'GET', `/jobs/${job.id}/logs`)).text;
    return { done, log, ...probed(log) };
  };

  it("on a pilot: a uid of the worker's own, not root, and nothing a job left meets the next job", async () => {
    const a1 = await run('alice', 'teama', 'pilot');
    assert.ok(a1.uid >= 1000, `the job ran as uid ${a1.uid}, not root nor a system account\n${a1.log}`);
    assert.equal(a1.token, 'TOKEN-DENIED', a1.log);
    assert.equal(a1.environ, 'ENVIRON-DENIED', "the agent's environment is not the job's to read");
    assert.ok(a1.left > 0, a1.log);
    // Its end was reported only once every process of it had gone: the daemon is gone now. (The
    // pid it printed is its pid namespace's where the node gives it one: found by environment.)
    assert.deepEqual(jobProcesses(s, a1.done.id), [], `job ${a1.done.id} left processes running`);

    const a2 = await run('alice', 'teama', 'pilot');
    assert.equal(a2.done.worker?.id, a1.done.worker?.id, 'the same pilot ran both');
    assert.equal(a2.uid, a1.uid, "a pilot's jobs run as its uid");
    assert.deepEqual(jobProcesses(s, a2.done.id), []);
  });

  it("on a direct worker (no agent): the script drops to the worker's uid and ends what the job left", async () => {
    const a = await run('alice', 'teama', 'direct');
    assert.ok(a.uid >= 1000, `the job ran as uid ${a.uid}\n${a.log}`);
    assert.equal(a.token, 'TOKEN-DENIED', a.log);
    assert.ok(a.left > 0, a.log);
    assert.equal(alive(a.left), false, `process ${a.left} that the job left is still running`);
  });

  it('runs a project mapped to a user of the cluster as that user (sbatch --uid)', async () => {
    const b = await run('bob', 'teamb', 'direct');
    assert.equal(b.user, MAPPED, b.log);
    assert.equal(b.token, 'TOKEN-DENIED', b.log);
    const targets = await call<{ name: string; isolation: string | null }[]>(
      s.api,
      tokens.bob,
      'GET',
      '/targets',
    );
    const direct = targets.body.find((t) => t.name === 'direct');
    assert.match(direct?.isolation ?? '', new RegExp(`project teamb as ${MAPPED}`));
  });
});
