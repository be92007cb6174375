/**
 * What holds a job (docs/SECURITY.md, "Namespaces"), tried as a determined tenant would, with real
 * processes, uids and namespaces: bob (a member of teamb) runs jobs that try to outlive their end,
 * to swap an artifact for the admin token while it is collected, to meet alice's job in /tmp,
 * /dev/shm and /proc, and to learn what lies in a directory they cannot read. The factory runs
 * with `cgroups: off`, so that the pid namespace alone is what ends a job, as on a machine whose
 * cgroups berth cannot use.
 *
 * The control suite runs the same daemon with namespaces, cgroups and uids off: there it outlives
 * its job, so each check here can fail.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { alive, HOPPER, jobProcesses } from '../helpers/processes.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { makeMappedUser, MAPPED_USER, twoTenants, type Tenants } from './tenants.js';

const support = probeSandbox();
const skip =
  process.getuid?.() !== 0
    ? 'jobs get namespaces and uids of their own only where the server runs as root'
    : support.available
      ? false
      : `jobs get no namespaces here: ${support.why}`;

interface World {
  s: TestServer;
  t: Tenants;
  scratch: string;
}

function useWorld(settings: string): () => World {
  let w: World | undefined;
  before(async () => {
    makeMappedUser();
    const s = await startTestServer({
      config: [
        'graceSeconds: 1',
        'heartbeatSeconds: 10',
        'factories:',
        `  local: { kind: local, capacity: 4${settings} }`,
        'targets:',
        '  local: { factory: local }',
      ].join('\n'),
    });
    const t = await twoTenants(s);
    // teamc (with `runAs.projects`): bob's too, its jobs run as a Unix user of the machine (runAs.projects).
    if (settings.includes('teamc'))
      for (const [method, path, body] of [
        ['POST', '/projects', { name: 'teamc', clusterQueue: 'default' }],
        ['PUT', '/projects/teamc/members/bob', { role: 'member' }],
      ] as const) {
        const r = await call(s.api, s.adminToken, method, path, body);
        assert.ok(r.status < 300, r.text);
      }
    w = { s, t, scratch: scratchDir('berth-confine-') };
  });
  after(() => w?.s.close());
  return () => w!;
}

const logOf = async (w: World, token: string, id: number): Promise<string> =>
  (await call<string>(w.s.api, token, 'GET', `/jobs/${id}/logs`)).text;

async function run(w: World, token: string, project: string, body: Record<string, unknown>) {
  const job = await submit(w.s.api, token, project, body);
  const done = await waitDone(w.s.api, token, job.id);
  return { job, done, log: await logOf(w, token, job.id) };
}

describe('a job in namespaces of its own, cgroups off', { skip }, () => {
  const world = useWorld(`, cgroups: off, runAs: { projects: { teamc: ${MAPPED_USER} } }`);

  it('ends a daemon that hops pids before its end is recorded, and none of it lives on', async () => {
    const w = world();
    const beacon = join(w.scratch, 'beacon-1');
    const { job, done, log } = await run(w, w.t.bob, 'teamb', { script: HOPPER, env: { BEACON: beacon } });
    assert.equal(done.state, 'succeeded', done.reason);
    assert.match(log, /^hopper-started$/m, log);
    // Recorded as ended and cleaned up: nothing of it runs, now or a moment later.
    assert.deepEqual(jobProcesses(w.s, job.id), []);
    writeFileSync(beacon, 'seen');
    const next = await run(w, w.t.alice, 'teama', { script: 'echo next' });
    assert.equal(next.done.state, 'succeeded');
    assert.equal(readFileSync(beacon, 'utf8'), 'seen', 'no hop touched the beacon after the job ended');
  });

  for (const [project, who] of [
    ['teamb', 'a uid of its own'],
    ['teamc', 'a mapped user'],
  ] as const)
    it(`collects artifacts only once nothing of the job runs: a swap for the admin token gets nothing (${who})`, async () => {
      const w = world();
      const token = join(w.s.dataDir, 'admin.token');
      // The daemon swaps b.txt for a link to the admin token, over and over, from the job's end on.
      const script = [
        'echo own-a > a.txt; echo own-b > b.txt',
        `export SWAP='while :; do ln -sfn "${token}" l.tmp && mv -T l.tmp b.txt; echo own-b > o.tmp && mv -T o.tmp b.txt; done'`,
        'setsid sh -c "$SWAP" </dev/null >/dev/null 2>&1 &',
        'sleep 0.2',
      ].join('\n');
      const r = await run(w, w.t.bob, project, { script, artifacts: ['a.txt', 'b.txt'] });
      assert.equal(r.done.state, 'succeeded', r.done.reason);
      const admin = readFileSync(token, 'utf8').trim();
      for (const name of ['a.txt', 'b.txt']) {
        const res = await fetch(`${w.s.api}/jobs/${r.job.id}/artifacts/${name}`, {
          headers: { authorization: `Bearer ${w.t.bob}` },
        });
        const body = await res.text();
        assert.ok(!body.includes(admin), `${name} holds the admin token`);
        assert.ok(!r.log.includes(admin), 'the log holds the admin token');
        // Its own bytes, or nothing: a link in its place is not kept (not matched, or refused).
        if (res.status === 200) assert.equal(body, `own-${name[0]}\n`);
        else assert.equal(res.status, 404, body);
      }
      assert.deepEqual(jobProcesses(w.s, r.job.id), []);
    });

  it("gives each job its own /tmp and /dev/shm: a tenant's planted file, link or FIFO meets no one", async () => {
    const w = world();
    const gate = join(w.scratch, 'gate-tmp');
    const ready = join(w.scratch, 'alice-wrote');
    const unique = `berth-confine-${process.pid}-${Date.now()}`;
    const alice = await submit(w.s.api, w.t.alice, 'teama', {
      script: [
        `echo alice > /tmp/${unique}; echo alice > /dev/shm/${unique}`,
        `: > ${ready}`,
        `while [ ! -e ${gate} ]; do sleep 0.05; done`,
        `echo "ALICE READS $(cat /tmp/${unique}) $(cat /dev/shm/${unique})"`,
      ].join('\n'),
    });
    await waitFor('alice to write her files', () => existsSync(ready));
    const bob = await run(w, w.t.bob, 'teamb', {
      script: [
        `ls /tmp/${unique} /dev/shm/${unique} >/dev/null 2>&1 && echo BOB SEES ALICE || echo BOB SEES NOTHING`,
        // Planted where alice's job would look, mode 0666, and a link and a FIFO for the host.
        `echo bob > /tmp/${unique}; chmod 666 /tmp/${unique}; echo bob > /dev/shm/${unique}`,
        `ln -s /etc/shadow /tmp/${unique}.link; mkfifo /tmp/${unique}.fifo`,
      ].join('\n'),
    });
    assert.match(bob.log, /^BOB SEES NOTHING$/m, bob.log);
    writeFileSync(gate, '');
    const a = await waitDone(w.s.api, w.t.alice, alice.id);
    assert.equal(a.state, 'succeeded', a.reason);
    assert.match(await logOf(w, w.t.alice, alice.id), /^ALICE READS alice alice$/m);
    // Nothing of either job is in the host's /tmp or /dev/shm.
    for (const path of [`/tmp/${unique}`, `/tmp/${unique}.link`, `/tmp/${unique}.fifo`, `/dev/shm/${unique}`])
      assert.equal(existsSync(path), false, `${path} is on the host`);
  });

  it('shows a job its own processes only: not the server, not another job', async () => {
    const w = world();
    const gate = join(w.scratch, 'gate-proc');
    const pidFile = join(w.scratch, 'victim-pid');
    const victim = await submit(w.s.api, w.t.alice, 'teama', {
      // Only the file's being there is read (not a rename into place: under user-mode-linux the
      // host's filesystem shows the job's file as root's, and the sticky scratch directory then
      // refuses the job's rename of it).
      script: `echo $$ > ${pidFile}; while [ ! -e ${gate} ]; do sleep 0.05; done`,
      env: { VICTIM_PASSWORD: 'hunter2' },
    });
    await waitFor('the victim to run', async () => {
      if (existsSync(pidFile)) return true;
      const v = await getJob(w.s.api, w.t.alice, victim.id);
      // Ended without running its first line: say how, rather than wait out the deadline.
      assert.ok(
        !['succeeded', 'failed', 'cancelled'].includes(v.state),
        `the victim ${v.state}: ${v.reason}`,
      );
      return false;
    });
    const [vpid] = jobProcesses(w.s, victim.id).filter((p) => alive(p));
    assert.ok(vpid !== undefined);
    const { log } = await run(w, w.t.bob, 'teamb', {
      script: [
        `[ -e /proc/${process.pid} ] && echo SERVER VISIBLE || echo SERVER HIDDEN`,
        `[ -e /proc/${vpid} ] && echo VICTIM VISIBLE || echo VICTIM HIDDEN`,
        'grep -l hunter2 /proc/[0-9]*/environ 2>/dev/null | wc -l | sed "s/^/ENVIRONS WITH THE PASSWORD /"',
        "echo PROCESSES $(ls /proc | grep -c '^[0-9]')",
      ].join('\n'),
    });
    writeFileSync(gate, '');
    await waitDone(w.s.api, w.t.alice, victim.id);
    assert.match(log, /^SERVER HIDDEN$/m, log);
    assert.match(log, /^VICTIM HIDDEN$/m, log);
    assert.match(log, /^ENVIRONS WITH THE PASSWORD 0$/m, log);
    // Its init, its shell, and what the shell runs to count: a handful, not the machine's hundreds.
    const count = Number(/^PROCESSES (\d+)$/m.exec(log)?.[1]);
    assert.ok(count > 0 && count < 10, log);
  });

  it('looks a command up as the job: a file in a directory it cannot read is not found, as a missing one', async () => {
    const w = world();
    const hidden = join(w.scratch, 'root-only');
    mkdirSync(hidden, { mode: 0o700 });
    writeFileSync(join(hidden, 'tool'), '#!/bin/sh\necho ran\n', { mode: 0o755 });
    chmodSync(hidden, 0o700);
    const there = await run(w, w.t.bob, 'teamb', { command: [join(hidden, 'tool')] });
    const missing = await run(w, w.t.bob, 'teamb', { command: [join(hidden, 'nothing')] });
    const reason = (d: JobView, name: string) => d.reason.replace(name, 'NAME');
    assert.equal(there.done.state, 'failed');
    assert.equal(reason(there.done, 'tool'), reason(missing.done, 'nothing'));
    assert.match(there.done.reason, /command not found/);
  });
});

describe('the same daemon with namespaces, cgroups and uids off (the control)', { skip }, () => {
  const world = useWorld(', cgroups: off, namespaces: off, isolation: off');

  it('outlives its job', async () => {
    const w = world();
    const beacon = join(w.scratch, 'beacon-control');
    const { done } = await run(w, w.t.bob, 'teamb', { script: HOPPER, env: { BEACON: beacon } });
    assert.equal(done.state, 'succeeded', done.reason);
    try {
      // A scan of /proc may miss it between two pids (the attack's point): its beacon does not.
      writeFileSync(beacon, 'seen');
      await waitFor(
        'the daemon to touch its beacon after its job ended',
        () => readFileSync(beacon, 'utf8') === '',
      );
    } finally {
      writeFileSync(`${beacon}.stop`, '');
    }
  });
});
