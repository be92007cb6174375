/**
 * The slurm factory's direct workers (`sharedDir`), end to end on real Slurm (scripts/slurm/
 * cluster.sh): the batch script runs the job's command itself, with no `berth agent`; the server
 * starts the job when squeue says it runs, streams its output from the shared directory, stops it
 * with scancel on cancel and timeout, reports its exit status, and — after a kill -9 — takes the
 * worker over and goes on from the output it had already logged.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FinishRequest, StartResponse } from '../../src/agent/protocol.js';
import { resolveConfig } from '../../src/config/load.js';
import type { AgentPort } from '../../src/factories/factory.js';
import { ConfigError } from '../../src/domain/errors.js';
import { isEndedState, SlurmCli } from '../../src/factories/slurm/slurm-cli.js';
import {
  directScript,
  directPaths,
  DirectRun,
  envFile,
  exitedWith,
  readExit,
} from '../../src/factories/slurm/direct-run.js';
import { ok, useCliServer } from '../cli/cli.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const config = (shared: string, heartbeat = 120) =>
  [
    'graceSeconds: 2',
    `heartbeatSeconds: ${heartbeat}`,
    'defaultTarget: hpc',
    'factories:',
    `  hpc: { kind: slurm, partition: main, capacity: 4, timeLimit: 10m, pollSeconds: 0.5, sharedDir: ${shared} }`,
    'targets:',
    '  hpc: { factory: hpc }',
  ].join('\n');

describe('direct workers, the pure parts', () => {
  const paths = directPaths('/shared/berth', 'berth-x-hpc-w7');
  const spec: StartResponse = {
    jobId: 3,
    project: 'p',
    command: ['sh', '-c', 'echo "$1"', 'a b'],
    env: {},
    resources: {},
    timeoutSeconds: null,
    graceSeconds: 1,
    heartbeatSeconds: 30,
    rank: 0,
    worldSize: 1,
    hosts: [''],
  };

  it('gives each worker a working directory, and its files beside it, named after its Slurm job', () => {
    assert.deepEqual(paths, {
      work: '/shared/berth/berth-x-hpc-w7',
      env: '/shared/berth/berth-x-hpc-w7.env',
      out: '/shared/berth/berth-x-hpc-w7.out',
      exit: '/shared/berth/berth-x-hpc-w7.exit',
      logged: '/shared/berth/berth-x-hpc-w7.logged',
    });
  });

  it('writes variables the shell reads back unchanged, and leaves out names it cannot take', () => {
    assert.equal(
      envFile({ A: "it's $HOME", B_2: 'x\ny', 'NOT-A-NAME': 'z' }),
      "export A='it'\\''s $HOME'\nexport B_2='x\ny'\n",
    );
  });

  it('runs the command quoted, with its variables, in a directory of its own, and leaves its exit status', () => {
    const script = directScript(spec, paths, { BERTH_TOKEN: 'secret', A: "it's" });
    assert.match(script, /^#!\/bin\/sh\n/);
    assert.match(script, /\nexport BERTH_TOKEN=secret\nexport A='it'\\''s'\n/);
    assert.match(script, /\ncd \/shared\/berth\/berth-x-hpc-w7 \|\| \{[^\n]*exit 125; \}\n/);
    assert.match(
      script,
      /\nsh -c 'echo "\$1"' 'a b' <\/dev\/null\nrc=\$\?\necho "\$rc" > \/shared\/berth\/berth-x-hpc-w7\.exit\n/,
    );
  });

  it('runs the command with its variables in its working directory, and not without one', () => {
    const dir = scratchDir('berth-direct-');
    try {
      const p = directPaths(dir, 'w');
      const run = (command: string[]) =>
        spawnSync('sh', ['-s'], {
          input: directScript({ ...spec, command }, p, { GREETING: "it's $HOME" }),
          encoding: 'utf8',
        });
      mkdirSync(p.work);
      const first = run(['sh', '-c', 'echo "$GREETING in $(pwd)"; exit 3']);
      assert.equal(first.stdout, `it's $HOME in ${p.work}\n`);
      assert.equal(first.status, 3);
      assert.equal(readExit(p), 3);
      // Its directory gone (removed by hand, say): the command does not run anywhere else.
      rmSync(p.exit);
      rmSync(p.work, { recursive: true });
      const again = run(['sh', '-c', 'echo ran']);
      assert.equal(again.status, 125);
      assert.equal(again.stdout, '');
      assert.match(again.stderr, /berth: the job's working directory is gone/);
      assert.equal(readExit(p), undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads an exit status only once it is whole; 128 + N is signal N, as sh says', () => {
    const dir = scratchDir('berth-direct-');
    try {
      const p = directPaths(dir, 'w');
      assert.equal(readExit(p), undefined);
      writeFileSync(p.exit, '3');
      assert.equal(readExit(p), undefined, 'no newline yet: still being written');
      writeFileSync(p.exit, '3\n');
      assert.equal(readExit(p), 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.deepEqual(exitedWith(0), { outcome: 'exited', exitCode: 0, signal: null });
    assert.deepEqual(exitedWith(137), { outcome: 'exited', exitCode: 137, signal: 'SIGKILL' });
  });

  it('appends each byte of output once, when a poll and the end read at the same time', async () => {
    const dir = scratchDir('berth-direct-');
    try {
      const p = directPaths(dir, 'w');
      writeFileSync(p.out, 'one\n');
      writeFileSync(p.exit, '0\n');
      const logged: Buffer[] = [];
      let finished: FinishRequest | undefined;
      const agent: AgentPort = {
        agentStart: (jobId) =>
          Promise.resolve({ ...spec, jobId, timeoutSeconds: null, heartbeatSeconds: 3600 }),
        agentHeartbeat: () => new Promise(() => {}),
        // Slow, as a commit is: the other read comes meanwhile.
        agentLogs: async (_id, data) => {
          await new Promise((r) => setTimeout(r, 20));
          logged.push(data);
        },
        agentFinish: (_id, r) => {
          finished = r;
          return Promise.resolve();
        },
        agentSpec: () => spec,
      };
      const run = new DirectRun({
        workerId: 1,
        jobId: 2,
        paths: p,
        agent,
        stop: () => {},
        lost: assert.fail,
      });
      await run.start('n1');
      const poll = run.readOutput();
      writeFileSync(p.out, 'one\ntwo\n');
      await Promise.all([poll, run.end('COMPLETED', 'n1')]);
      assert.equal(Buffer.concat(logged).toString(), 'one\ntwo\n');
      assert.deepEqual(finished, { outcome: 'exited', exitCode: 0, signal: null });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses pilots on a factory without agents, and a relative sharedDir, naming the key', () => {
    const raw = (shared: string, target: Record<string, unknown>) => ({
      factories: { hpc: { kind: 'slurm' as const, sharedDir: shared } },
      targets: { hpc: { factory: 'hpc', ...target } },
    });
    assert.throws(
      () => resolveConfig(raw('/shared', { reuse: true }), {}),
      (e: unknown) =>
        e instanceof ConfigError &&
        /targets\.hpc\.reuse/.test(e.message) &&
        /pilots need berth agent/.test(e.message),
    );
    assert.throws(
      () => resolveConfig(raw('shared', {}), {}),
      (e: unknown) => e instanceof ConfigError && /factories\.hpc\.sharedDir/.test(e.message),
    );
  });
});

describe('direct workers on Slurm', { skip: slurmSkip() }, () => {
  const slurm = new SlurmCli();
  const shared = scratchDir('berth-direct-shared-');
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    // Of the server's environment, a job gets only PATH, HOME and the like.
    process.env.BERTH_DIRECT_TEST_SECRET = 'not for jobs';
  });
  const ctx = useCliServer(undefined, { config: config(shared) });
  after(() => {
    delete process.env.BERTH_DIRECT_TEST_SECRET;
    rmSync(shared, { recursive: true, force: true });
  });

  const submitted = (out: string): number => {
    const m = /^submitted job (\d+) /m.exec(out);
    assert.ok(m, out);
    return Number(m[1]);
  };
  const logs = async (id: number) =>
    (await call(ctx.server.api, ctx.server.adminToken, 'GET', `/jobs/${id}/logs`)).text;

  it('runs the command in the Slurm job itself: its output, variables, token and exit status', async () => {
    const result = await ctx.admin([
      'submit',
      '--wait',
      '--',
      'sh',
      '-c',
      [
        'echo "slurm=$SLURM_JOB_ID node=$SLURMD_NODENAME hosts=$BERTH_HOSTS"',
        'echo "job=$BERTH_JOB_ID rank=$BERTH_RANK/$BERTH_WORLD_SIZE pwd=$(pwd) workdir=$BERTH_WORKDIR"',
        'echo "secret=${BERTH_DIRECT_TEST_SECRET:-none} agent=$(ps -o args= -p $PPID | grep -c "berth agent")"',
        // The job's token reaches the job's own data.
        `node -e 'fetch(process.env.BERTH_URL + "/api/v1/job/self", { headers: { authorization: "Bearer " + process.env.BERTH_TOKEN } }).then((r) => console.log("self=" + r.status))'`,
        'echo "token=$BERTH_TOKEN"',
        'echo "to stderr" >&2',
        'exit 3',
      ].join('; '),
    ]);
    // `submit --wait` exits with the job's exit code.
    assert.equal(result.code, 3, result.stderr);
    const out = result.stdout;
    const id = submitted(out);
    const job = await waitDone(ctx.server.api, ctx.server.adminToken, id);
    assert.equal(job.state, 'failed');
    assert.equal(job.reason, 'exited with code 3');
    assert.equal(job.exitCode, 3);
    const text = await logs(id);
    const slurmLine = /^slurm=(\d+) node=(n\d) hosts=(n\d)$/m.exec(text);
    assert.ok(slurmLine, text);
    assert.equal(slurmLine[2], slurmLine[3], 'BERTH_HOSTS is its node');
    const jobLine = /^job=(\d+) rank=0\/1 pwd=(\S+) workdir=(\S+)$/m.exec(text);
    assert.ok(jobLine, text);
    assert.equal(Number(jobLine[1]), id);
    assert.equal(jobLine[2], jobLine[3]);
    assert.ok(jobLine[2]!.startsWith(shared), jobLine[2]);
    assert.match(text, /^secret=none agent=0$/m);
    assert.match(text, /^self=200$/m);
    assert.match(text, /^to stderr$/m);
    // Its worker is destroyed: nothing of it is left in the shared directory, nor in Slurm.
    await waitFor(
      'the worker to be destroyed',
      async () => (await getJob(ctx.server.api, ctx.server.adminToken, id)).worker?.state === 'destroyed',
    );
    assert.deepEqual(readdirSync(shared), []);
    const slurmJob = (await slurm.jobs({ ids: [slurmLine[1]!] }))[0];
    assert.ok(slurmJob === undefined || isEndedState(slurmJob.state));
    // Its token died with it.
    const token = /^token=(\S+)$/m.exec(text)?.[1];
    assert.ok(token, text);
    const self = await call(ctx.server.api, token, 'GET', '/job/self');
    assert.equal(self.status, 401, self.text);
  });

  it("streams a running job's output, leaves no file of its variables, and cancels it with scancel", async () => {
    const id = submitted(ok(await ctx.admin(['submit', '--', 'sh', '-c', 'echo first; sleep 300'])));
    await waitFor('the first line while it runs', async () => /^first$/m.test(await logs(id)));
    const job = await getJob(ctx.server.api, ctx.server.adminToken, id);
    assert.equal(job.state, 'running');
    const [dir] = readdirSync(shared).filter((f) => statSync(join(shared, f)).isDirectory());
    assert.ok(dir, 'its working directory');
    assert.equal(statSync(join(shared, dir)).mode & 0o777, 0o700);
    // Its token is in the script Slurm keeps, not in a file of the shared directory.
    assert.deepEqual(
      readdirSync(shared).filter((f) => f !== dir && f !== `${dir}.out` && f !== `${dir}.logged`),
      [],
    );
    const slurmId = (await slurm.jobs({ namePrefix: dir })).find((j) => j.name === dir)?.id;
    assert.ok(slurmId, 'its Slurm job');
    ok(await ctx.admin(['cancel', String(id)]));
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 30_000);
    assert.equal(done.state, 'cancelled');
    await waitFor('its Slurm job to end', async () => {
      const j = (await slurm.jobs({ ids: [slurmId] }))[0];
      return j === undefined || isEndedState(j.state);
    });
    await waitFor(
      'its files to go',
      () => !existsSync(join(shared, dir)) && readdirSync(shared).length === 0,
    );
  });

  it('records a worker destroyed only once Slurm has ended its job, though its exit file comes first', async () => {
    // The script writes the exit file a moment before it ends and Slurm completes its job. That
    // moment is stretched here: the command writes the exit file itself, then goes on for 2 s.
    const job = await submit(ctx.server.api, ctx.server.adminToken, 'default', {
      command: ['sh', '-c', 'echo 0 > "$BERTH_WORKDIR.exit"; sleep 2'],
    });
    const workerId = await waitFor('its worker to be destroyed', async () => {
      const worker = (await getJob(ctx.server.api, ctx.server.adminToken, job.id)).worker;
      return worker?.state === 'destroyed' ? worker.id : undefined;
    });
    const live = (await slurm.jobs({ namePrefix: 'berth-' })).filter(
      (j) => j.name.endsWith(`-w${workerId}`) && !isEndedState(j.state),
    );
    assert.deepEqual(live, [], `worker ${workerId} is destroyed`);
    assert.equal((await getJob(ctx.server.api, ctx.server.adminToken, job.id)).state, 'succeeded');
  });

  it('stops a job at its timeout', async () => {
    const id = submitted(ok(await ctx.admin(['submit', '--timeout', '2s', '--', 'sleep', '300'])));
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 60_000);
    assert.equal(done.state, 'failed');
    assert.equal(done.reason, 'timed out after 2s');
  });

  it('fails a gang job at once, saying it needs an agent', async () => {
    const job = await submit(ctx.server.api, ctx.server.adminToken, 'default', {
      command: ['true'],
      workers: 2,
    });
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, job.id, 30_000);
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /runs jobs without an agent \(sharedDir\): a gang job needs one/);
  });
});

describe('direct workers across a kill -9 of the server', { skip: slurmSkip() }, () => {
  const dir = scratchDir('berth-direct-adopt-');
  const shared = join(dir, 'shared');
  const configFile = join(dir, 'berth.yaml');
  const dataDir = join(dir, 'data');
  let server: ServerProcess | undefined;
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    writeFileSync(configFile, config(shared, 10));
  });
  after(async () => {
    if (server) await killHard(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes the worker over and goes on from the output already logged: every line once', async () => {
    server = await spawnServer(dataDir, configFile);
    const flag = join(dir, 'go');
    const a = await submit(server.api, server.token, 'default', {
      command: ['sh', '-c', `echo before; while [ ! -e ${flag} ]; do sleep 0.2; done; echo after; exit 5`],
    });
    // A job that ends while no server runs: its exit status waits in the shared directory.
    const b = await submit(server.api, server.token, 'default', {
      command: ['sh', '-c', `echo b; while [ ! -e ${flag} ]; do sleep 0.2; done`],
    });
    const view = () => server!;
    const logsOf = async (id: number) =>
      (await call(view().api, view().token, 'GET', `/jobs/${id}/logs`)).text;
    for (const [job, line] of [
      [a, 'before'],
      [b, 'b'],
    ] as const)
      await waitFor(`job ${job.id}'s first line`, async () => (await logsOf(job.id)).includes(line));

    await killHard(server);
    writeFileSync(flag, '');
    // b's script ends while no server runs.
    await waitFor("b's exit status", () => readdirSync(shared).some((f) => f.endsWith('.exit')));
    server = await spawnServer(dataDir, configFile, { listen: new URL(server.url).host });

    const doneA = await waitDone(view().api, view().token, a.id, 60_000);
    assert.equal(doneA.state, 'failed');
    assert.equal(doneA.reason, 'exited with code 5');
    assert.equal(await logsOf(a.id), 'before\nafter\n');
    const doneB = await waitDone(view().api, view().token, b.id, 60_000);
    assert.equal(doneB.state, 'succeeded');
    assert.equal(await logsOf(b.id), 'b\n');
    assert.ok((await events(view().api, view().token, a.id)).some((e) => e.type === 'worker-adopted'));
    await waitFor('the shared directory to be emptied', () => readdirSync(shared).length === 0);
  });
});
