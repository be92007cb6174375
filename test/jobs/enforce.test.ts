/**
 * The local factory enforces jobs' requests with real cgroups (v1 here): a job over its memory
 * limit is killed and says so, one within it succeeds, a CPU request becomes a CFS quota, a job's
 * groups are gone once it is cleaned up, and groups a server that died left are removed when a
 * local factory starts. Skipped, saying why, on a machine without writable cgroup controllers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';

import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { joinArgv } from '../../src/agent/cgroups.js';
import { resolveConfig } from '../../src/config/load.js';
import { CgroupEnforcement } from '../../src/factories/cgroups.js';
import { LocalFactory } from '../../src/factories/local.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { groupsOf, localConfig, logs, start, type Started } from '../helpers/started-server.js';
import { call } from '../helpers/server.js';

// Checked before any test: what this machine allows, found as the factory finds it.
const probeDir = scratchDir('berth-enforce-probe-');
const probe = CgroupEnforcement.open({ factory: 'local', dataDir: probeDir, mode: 'auto' }, false);
rmSync(probeDir, { recursive: true });
const skipUnless = (controller: 'memory' | 'cpu'): false | string =>
  probe.version === 2
    ? 'cgroup v2 here: test/security/cgroup-v2.test.ts tries it'
    : probe.controllers.has(controller)
      ? false
      : `no writable cgroup ${controller} controller on this machine (${probe.summary})`;

describe('requests enforced with cgroups', { skip: skipUnless('memory') }, () => {
  let s: Started;
  let scratch: string;
  before(async () => {
    scratch = scratchDir('berth-enforce-gates-');
    s = await start(
      `${localConfig()}\n  bounded: { factory: local, defaultRequests: { memory: 64Mi }, maxRequests: { memory: 128Mi } }`,
    );
  });
  after(async () => {
    await s.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('says so at start', () => {
    const line = s.lines.find((l) => l.startsWith('local factory "local":'));
    assert.match(line ?? '', /^local factory "local": requests enforced by cgroup v1 \(memory/);
  });

  it("holds a job that asked for nothing to its target's defaultRequests, and refuses one over maxRequests", async () => {
    const job = await submit(s.api, s.token, 'default', {
      target: 'bounded',
      command: ['sh', '-c', 'head -c 600M /dev/zero | tail'],
    });
    assert.deepEqual(job.requests, { memory: '64Mi' });
    const done = await waitDone(s.api, s.token, job.id);
    assert.deepEqual([done.state, done.reason], ['failed', 'killed: out of memory (limit 64Mi)']);
    const submitted = (
      await call<{ type: string; message: string }[]>(s.api, s.token, 'GET', `/jobs/${job.id}/events`)
    ).body.find((e) => e.type === 'submitted');
    assert.match(submitted?.message ?? '', /; requests memory=64Mi, target bounded's defaultRequests$/);
    const over = await call<{ error: { message: string } }>(
      s.api,
      s.token,
      'POST',
      '/projects/default/jobs',
      {
        target: 'bounded',
        command: ['true'],
        requests: { memory: '1Gi' },
      },
    );
    assert.equal(over.status, 422);
    assert.equal(
      over.body.error.message,
      'requests.memory: 1Gi is more than target "bounded" lets a job ask for (maxRequests.memory: 128Mi)',
    );
  });

  it('kills a job over its memory limit and says it ran out of memory', async () => {
    // tail keeps its input until the last line ends, and /dev/zero has no line ends: 600 MB held.
    const job = await submit(s.api, s.token, 'default', {
      command: ['sh', '-c', 'head -c 600M /dev/zero | tail'],
      requests: { memory: '64Mi' },
    });
    const done = await waitDone(s.api, s.token, job.id);
    assert.equal(done.state, 'failed');
    assert.equal(done.reason, 'killed: out of memory (limit 64Mi)');
    assert.notEqual(done.exitCode, 0);
    assert.match(await logs(s, job.id), /berth: killed: out of memory \(limit 64Mi\)\n/);
    const factory = s.server.factories.get('local') as LocalFactory;
    for (const parent of factory.enforcement.controllers.values())
      assert.deepEqual(
        readdirSync(parent).filter((d) => d.startsWith(`job-${job.id}.`)),
        [],
        `the job's group is gone from ${parent}`,
      );
  });

  it(
    'runs a job within its limits in its own groups, with a CPU quota, and removes them after',
    { skip: skipUnless('cpu') },
    async () => {
      const gate = join(scratch, 'gate-within');
      const job = await submit(s.api, s.token, 'default', {
        command: [
          'sh',
          '-c',
          `head -c 16M /dev/zero | tail >/dev/null; cat /proc/self/cgroup; while [ ! -e ${gate} ]; do sleep 0.05; done`,
        ],
        requests: { memory: '128Mi', cpu: '500m' },
      });
      const groups = await waitFor('the job to run in its groups', async () => {
        const j = await getJob(s.api, s.token, job.id);
        const dirs = j.state === 'running' ? groupsOf(s, j) : [];
        return dirs.length === 3 && (await logs(s, job.id)).includes('memory:') ? { j, dirs } : undefined;
      });
      const name = `job-${job.id}.worker-${groups.j.worker!.id}`;
      // Memory and CPU as requested; pids by default, for every job (a fork bomb's bound).
      const [memory = '', cpu = '', pids = ''] = groups.dirs;
      assert.ok(memory.endsWith(name) && cpu.endsWith(name) && pids.endsWith(name), groups.dirs.join(' '));
      assert.equal(readFileSync(join(pids, 'pids.max'), 'utf8').trim(), '4096');
      assert.equal(readFileSync(join(memory, 'memory.limit_in_bytes'), 'utf8').trim(), String(128 * 2 ** 20));
      assert.equal(readFileSync(join(cpu, 'cpu.cfs_quota_us'), 'utf8').trim(), '50000');
      assert.equal(readFileSync(join(cpu, 'cpu.cfs_period_us'), 'utf8').trim(), '100000');
      // The job's own process reports itself inside both groups.
      const own = await logs(s, job.id);
      assert.match(
        own,
        new RegExp(`^\\d+:(?:[a-z_]+,)*memory(?:,[a-z_]+)*:\\S*/${name.replace('.', '\\.')}$`, 'm'),
      );
      assert.match(
        own,
        new RegExp(`^\\d+:(?:[a-z_]+,)*cpu(?:,[a-z_]+)*:\\S*/${name.replace('.', '\\.')}$`, 'm'),
      );

      writeFileSync(gate, '');
      const done = await waitDone(s.api, s.token, job.id);
      assert.equal(done.state, 'succeeded', done.reason);
      for (const dir of groups.dirs) assert.equal(existsSync(dir), false, `${dir} removed`);
    },
  );

  it('puts a job that requests nothing in its pids group alone (the default pids limit)', async () => {
    const job = await submit(s.api, s.token, 'default', { command: ['cat', '/proc/self/cgroup'] });
    const done = await waitDone(s.api, s.token, job.id);
    assert.equal(done.state, 'succeeded', done.reason);
    const own = await logs(s, job.id);
    assert.match(own, /^\d+:pids:\S*\/berth-\S+\/job-\d+\.worker-\d+$/m);
    assert.doesNotMatch(own, /^\d+:(?:[a-z_]+,)*(?:memory|cpu)(?:,[a-z_]+)*:\S*berth-/m);
  });
});

describe('cgroups: off', () => {
  it('says at start that requests are not enforced, and confines no job', async () => {
    const s = await start(localConfig(', cgroups: off'));
    try {
      assert.ok(
        s.lines.includes('local factory "local": requests not enforced (cgroups: off)'),
        s.lines.join('\n'),
      );
      const job = await submit(s.api, s.token, 'default', {
        command: ['cat', '/proc/self/cgroup'],
        requests: { memory: '64Mi', cpu: '500m' },
      });
      const done = await waitDone(s.api, s.token, job.id);
      assert.equal(done.state, 'succeeded', done.reason);
      assert.doesNotMatch(await logs(s, job.id), /berth-/);
    } finally {
      await s.close();
    }
  });

  it('is a setting of local factories only', () => {
    assert.throws(
      () => resolveConfig({ factories: { sim: { kind: 'simulated', cgroups: 'off' } } }, {}),
      /factories\.sim\.cgroups: is for a local factory only/,
    );
  });
});

describe('cgroups: required', { skip: skipUnless('memory') || skipUnless('cpu') }, () => {
  it('starts where the machine allows, and applies pidsLimit', async () => {
    const s = await start(localConfig(', cgroups: required, pidsLimit: 64'));
    // Where the job can see it: its namespaces hide the rest of /tmp, the data directory's too.
    const gate = join(scratchDir('berth-enforce-'), 'gate-pids');
    try {
      const line = s.lines.find((l) => l.startsWith('local factory "local":'));
      assert.match(line ?? '', /requests enforced by cgroup v1 \(memory, cpu, pids\)/);
      // A pids limit applies to every job, whatever it requests.
      const job = await submit(s.api, s.token, 'default', {
        command: ['sh', '-c', `while [ ! -e ${gate} ]; do sleep 0.05; done`],
      });
      const dirs = await waitFor('the job to run in its group', async () => {
        const d = groupsOf(s, await getJob(s.api, s.token, job.id));
        return d.length > 0 ? d : undefined;
      });
      assert.equal(dirs.length, 1);
      assert.equal(readFileSync(join(dirs[0]!, 'pids.max'), 'utf8').trim(), '64');
      writeFileSync(gate, '');
      const done = await waitDone(s.api, s.token, job.id);
      assert.equal(done.state, 'succeeded', done.reason);
      assert.equal(existsSync(dirs[0]!), false);
    } finally {
      await s.close();
    }
  });
});

/** A process that joins `group` before it runs (as a job's does), and how it ended. */
async function runIn(group: string): Promise<{ ended: Promise<NodeJS.Signals | null> }> {
  const [sh, ...args] = joinArgv({ dirs: [group] }, ['sleep', '300']);
  const child = spawn(sh!, args, { stdio: 'ignore' });
  const ended = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => resolve(signal)),
  );
  await waitFor('the process to join its group', () =>
    readFileSync(join(group, 'cgroup.procs'), 'utf8').includes(String(child.pid)),
  );
  return { ended };
}

/** `promise`, or a failure naming `what` after `ms`. */
async function within<T>(what: string, promise: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A pid no process has: that of a child that has exited (and been reaped). */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

describe('groups a crashed server left', { skip: skipUnless('memory') }, () => {
  let dataDir: string;
  const listener = { handleChanged: () => {}, workerLost: () => {} };
  const make = () => new LocalFactory({ name: 'local', capacity: 1, dataDir, listener });
  before(() => {
    dataDir = scratchDir('berth-enforce-stale-');
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it("are removed, with what runs in them, when a local factory starts: a dead server's", async () => {
    const probeFactory = make();
    const base = dirname(dirname(probeFactory.enforcement.controllers.get('memory')!));
    await probeFactory.close();
    // The groups of a server (pid gone) whose agent host died with it, a job still running.
    const server = join(base, `berth-${await deadPid()}-0123abcd`);
    const stale = join(server, 'local', 'job-7.worker-9');
    mkdirSync(stale, { recursive: true });
    const { ended } = await runIn(stale);

    const next = make();
    assert.equal(await within('the stale job to be killed', ended), 'SIGKILL');
    await next.close(); // waits for the sweep, then removes its own now empty parents
    assert.equal(existsSync(server), false, `${server} removed`);
  });

  it("and an earlier factory's of the same name in this process", async () => {
    const crashed = make(); // never closed, as if its server had been killed
    const parent = crashed.enforcement.controllers.get('memory')!;
    const stale = join(parent, 'job-8.worker-10');
    mkdirSync(stale);
    const { ended } = await runIn(stale);

    const next = make();
    assert.equal(await within('the stale job to be killed', ended), 'SIGKILL');
    await next.close();
    assert.equal(existsSync(stale), false);
    assert.equal(existsSync(parent), false);
  });

  it("but not a live server's", async () => {
    const probeFactory = make();
    const base = dirname(dirname(probeFactory.enforcement.controllers.get('memory')!));
    await probeFactory.close();
    // Another server's groups: its pid is alive.
    const alive = spawn('sleep', ['300'], { stdio: 'ignore' });
    const server = join(base, `berth-${alive.pid}-0123abcd`);
    const group = join(server, 'local', 'job-9.worker-11');
    mkdirSync(group, { recursive: true });
    try {
      await make().close();
      assert.equal(existsSync(group), true, 'a live server keeps its groups');
    } finally {
      alive.kill('SIGKILL');
      for (const dir of [group, dirname(group), server]) rmdirSync(dir);
    }
  });
});
