/**
 * The slurm factory end to end, on real Slurm (scripts/slurm/cluster.sh: slurmctld and three
 * slurmd on this machine): `berth` → API → scheduler → sbatch → `berth agent` on a node →
 * logs back. What only a Slurm worker does: Slurm's pending reason as the job's blocker, a node
 * failure ending the job with Slurm's state, the agent's one-time credential kept from the job,
 * a gang job as one allocation of three nodes with an agent on each.
 * After a kill -9 of the server, its running and pending workers are taken over by name.
 * (The Factory contract, restarts and kill -9 included, is the conformance suite's.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { isEndedState, SlurmCli } from '../../src/factories/slurm/slurm-cli.js';
import { shellQuote } from '../../src/factories/slurm/slurm-factory.js';
import { fails, ok, useCliServer } from '../cli/cli.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { ROOT } from '../helpers/root.js';

const CLUSTER_SH = join(ROOT, 'scripts', 'slurm', 'cluster.sh');
const run = promisify(execFile);

const slurmFactory = (extra = '') =>
  `{ kind: slurm, partition: main, capacity: 2, timeLimit: 10m, pollSeconds: 0.5${extra} }`;

const CONFIG = [
  'graceSeconds: 2',
  // Long: a failed node must be found by Slurm (within its SlurmdTimeout), not by a silent agent.
  'heartbeatSeconds: 120',
  'defaultTarget: hpc',
  'factories:',
  `  hpc: ${slurmFactory()}`,
  `  held: ${slurmFactory(', sbatchArgs: ["--hold"]')}`,
  `  onn2: ${slurmFactory(', sbatchArgs: ["--nodelist=n2"]')}`,
  '  pilots: { kind: slurm, partition: main, capacity: 1, timeLimit: 2m, pollSeconds: 0.5 }',
  '  minute: { kind: slurm, partition: main, capacity: 1, timeLimit: 1m, pollSeconds: 0.5 }',
  `  gang: ${slurmFactory().replace('capacity: 2', 'capacity: 3')}`,
  'targets:',
  '  gang: { factory: gang }',
  '  hpc: { factory: hpc }',
  '  held: { factory: held }',
  '  onn2: { factory: onn2 }',
  '  pilot: { factory: pilots, reuse: true, idleTimeout: 12s }',
  '  pilotdefault: { factory: pilots, reuse: true, idleTimeout: 12s, defaultTimeout: 30s }',
  '  minute: { factory: minute }',
  '  heldpilot: { factory: held, reuse: true, idleTimeout: 1s }',
].join('\n');

/**
 * The live Slurm job of worker `worker` of factory `factory` (its name ends -FACTORY-wWORKER): of
 * the servers the tests run at once, each names its jobs after itself, but numbers workers from 1.
 */
async function liveSlurmJob(slurm: SlurmCli, factory: string, worker: number) {
  return (await slurm.jobs({ namePrefix: 'berth-' })).find(
    (j) => j.name.endsWith(`-${factory}-w${worker}`) && !isEndedState(j.state),
  );
}

describe("the batch script's quoting (pure)", () => {
  it('keeps plain words, and quotes anything the shell would read', () => {
    assert.equal(shellQuote('/usr/bin/node'), '/usr/bin/node');
    assert.equal(shellQuote('--server=http://127.0.0.1:7070'), '--server=http://127.0.0.1:7070');
    assert.equal(shellQuote('/opt/my berth/main.js'), "'/opt/my berth/main.js'");
    assert.equal(shellQuote("it's $HOME `x`"), `'it'\\''s $HOME \`x\`'`);
    assert.equal(shellQuote(''), "''");
  });
});

describe('the slurm factory, end to end', { skip: slurmSkip() }, () => {
  const slurm = new SlurmCli();
  before(async () => {
    // Before the server's hooks: its factories find the cluster through SLURM_CONF.
    Object.assign(process.env, (await startSlurm()).env);
  });
  const ctx = useCliServer(undefined, { config: CONFIG });
  after(async () => {
    await run('bash', [CLUSTER_SH, 'node-start', 'n2']).catch(() => {});
  });

  const submitted = (out: string): number => {
    const m = /^submitted job (\d+) /m.exec(out);
    assert.ok(m, out);
    return Number(m[1]);
  };
  const slurmJobOf = async (jobId: number): Promise<string> => {
    const job = await getJob(ctx.server.api, ctx.server.adminToken, jobId);
    assert.ok(job.worker, `job ${jobId} has no worker`);
    const worker = job.worker.id;
    const named = await liveSlurmJob(slurm, job.target, worker);
    assert.ok(named, `no Slurm job for worker ${worker}`);
    return named.id;
  };
  const goneFromSlurm = (id: string) =>
    waitFor(`Slurm job ${id} to end`, async () => {
      const j = (await slurm.jobs({ ids: [id] }))[0];
      return j === undefined || isEndedState(j.state);
    });

  it("runs a job as a Slurm job, with its output in berth logs and Slurm's variables", async () => {
    const out = ok(
      await ctx.admin([
        'submit',
        '--wait',
        '--',
        'sh',
        '-c',
        'echo "node=$SLURMD_NODENAME slurm=$SLURM_JOB_ID"; env | grep -c bertha_ || true',
      ]),
    );
    const id = submitted(out);
    assert.match(out, new RegExp(`job ${id} succeeded`));
    const logs = ok(await ctx.admin(['logs', String(id)]));
    assert.match(logs, /^node=n[123] slurm=\d+$/m);
    // The agent's one-time credential never reaches the job's environment.
    assert.match(logs, /^0$/m);
  });

  it('runs a gang of three as one Slurm allocation of three nodes, an agent on each', async () => {
    const out = ok(
      await ctx.admin([
        'submit',
        '--wait',
        '--target',
        'gang',
        '--workers',
        '3',
        '--',
        'sh',
        '-c',
        'echo "$BERTH_RANK/$BERTH_WORLD_SIZE node=$SLURMD_NODENAME slurm=$SLURM_JOB_ID hosts=$BERTH_HOSTS"',
      ]),
    );
    const id = submitted(out);
    assert.match(out, new RegExp(`job ${id} succeeded`));
    const lines = ok(await ctx.admin(['logs', String(id)]))
      .trim()
      .split('\n')
      .sort();
    assert.equal(lines.length, 3, lines.join('\n'));
    const parsed = lines.map((l) => {
      const m = /^(\d): (\d)\/3 node=(n\d) slurm=(\d+) hosts=(\S+)$/.exec(l);
      assert.ok(m, l);
      return { label: m[1], rank: m[2], node: m[3]!, slurm: m[4], hosts: m[5]! };
    });
    assert.deepEqual(
      parsed.map((p) => [p.label, p.rank]),
      [
        ['0', '0'],
        ['1', '1'],
        ['2', '2'],
      ],
    );
    assert.deepEqual(parsed.map((p) => p.node).sort(), ['n1', 'n2', 'n3'], 'one member on each node');
    assert.equal(new Set(parsed.map((p) => p.slurm)).size, 1, 'one Slurm job for the gang');
    // Every member sees the same hosts, by rank.
    assert.deepEqual(
      parsed.map((p) => p.hosts),
      Array(3).fill(parsed.map((p) => p.node).join(',')),
    );
  });

  it('stops the rest of a gang on Slurm when one rank fails, and ends its allocation', async () => {
    const started = Date.now();
    const out = await ctx.admin([
      'submit',
      '--wait',
      '--target',
      'gang',
      '--workers',
      '3',
      '--',
      'sh',
      '-c',
      'if [ "$BERTH_RANK" = 2 ]; then exit 4; fi; sleep 300',
    ]);
    const id = submitted(out.stdout);
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 60_000);
    assert.equal(done.state, 'failed');
    assert.equal(done.reason, 'rank 2: exited with code 4');
    assert.equal(done.exitCode, 4);
    assert.ok(Date.now() - started < 60_000);
    const slurmJobs = await slurm.jobs({ namePrefix: 'berth-' });
    assert.equal(
      slurmJobs.filter((j) => j.name.endsWith(`-gang-w${done.worker!.id}`) && !isEndedState(j.state)).length,
      0,
      'its allocation has ended',
    );
  });

  it("shows Slurm's reason while Slurm keeps the worker pending, and cancel removes it", async () => {
    const id = submitted(ok(await ctx.admin(['submit', '--target', 'held', '--', 'sleep', '300'])));
    const status = await waitFor("berth status to show Slurm's reason", async () => {
      const s = ok(await ctx.admin(['status', String(id)]));
      return /JobHeldUser/.test(s) && s;
    });
    assert.match(status, /state:\s+admitted/);
    assert.match(status, /blocked by:.*worker \d+: Slurm keeps job \d+ pending: JobHeldUser/s);
    const slurmId = await slurmJobOf(id);
    ok(await ctx.admin(['cancel', String(id)]));
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id);
    assert.equal(done.state, 'cancelled');
    await goneFromSlurm(slurmId);
  });

  it('preempts a job whose worker Slurm still holds: requeued once, its quota given back once', async () => {
    const { api, adminToken } = ctx.server;
    const req = async (method: string, path: string, body?: unknown) => {
      const r = await call(api, adminToken, method, path, body);
      assert.ok(r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
      return r.body;
    };
    await req('POST', '/cluster-queues', {
      name: 'one',
      quota: { cpu: '1' },
      preemption: { withinClusterQueue: 'LowerPriority' },
    });
    await req('POST', '/projects', { name: 'pre', clusterQueue: 'one' });
    const victim = await submit(api, adminToken, 'pre', {
      command: ['sleep', '300'],
      target: 'held',
      requests: { cpu: '1' },
    });
    await waitFor('the victim to wait in Slurm', async () =>
      /JobHeldUser/.test((await getJob(api, adminToken, victim.id)).reason),
    );
    const urgent = await submit(api, adminToken, 'pre', {
      command: ['true'],
      priority: 100,
      requests: { cpu: '1' },
    });
    assert.equal((await waitDone(api, adminToken, urgent.id, 60_000)).state, 'succeeded');
    // The victim comes back and waits in Slurm again; one requeue, not two.
    await waitFor('the victim to be admitted again', async () => {
      const types = (await events(api, adminToken, victim.id)).map((e) => e.type);
      return types.filter((t) => t === 'admitted').length === 2 && types;
    });
    const types = (await events(api, adminToken, victim.id)).map((e) => e.type);
    assert.equal(types.filter((t) => t === 'requeued').length, 1, types.join(' '));
    ok(await ctx.admin(['cancel', String(victim.id)]));
    assert.equal((await waitDone(api, adminToken, victim.id)).state, 'cancelled');
    const queue = (await req('GET', '/cluster-queues/one')) as {
      usage: Record<string, string>;
      admitted: number;
      pending: number;
    };
    assert.deepEqual([queue.admitted, queue.pending], [0, 0], JSON.stringify(queue));
    for (const [resource, used] of Object.entries(queue.usage)) assert.match(used, /^0[a-zA-Z]*$/, resource);
  });

  it("refuses a timeout longer than the worker's Slurm time limit, in one line", async () => {
    fails(
      await ctx.admin(['submit', '--timeout', '20m', '--', 'true']),
      1,
      /timeoutSeconds: 1200 is longer than target "hpc" lets a worker run \(600 s/,
    );
  });

  it("stops a job at berth's own timeout", async () => {
    const id = submitted(ok(await ctx.admin(['submit', '--timeout', '2s', '--', 'sleep', '300'])));
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 60_000);
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /timed out after 2s/);
  });

  /** Runs a job on a pilot target: its Slurm job id (from its output), worker and timeout. */
  const runOn = async (target: string, timeout: string[]) => {
    const { api, adminToken } = ctx.server;
    const out = ok(
      await ctx.admin([
        'submit',
        '--wait',
        '--target',
        target,
        ...timeout,
        '--',
        'sh',
        '-c',
        'echo "slurm=$SLURM_JOB_ID"',
      ]),
    );
    const id = submitted(out);
    const slurmId = /^slurm=(\d+)$/m.exec(ok(await ctx.admin(['logs', String(id)])))?.[1];
    assert.ok(slurmId, `job ${id} printed its Slurm job`);
    const job = await getJob(api, adminToken, id);
    const types = (await events(api, adminToken, id)).map((e) => e.type);
    return {
      id,
      slurmId,
      worker: job.worker?.id,
      timeout: job.timeoutSeconds,
      reused: types.includes('worker-reused'),
    };
  };

  it('runs jobs one after another on a pilot, never one longer than its time left, and retires it when idle', async () => {
    const { api, adminToken } = ctx.server;
    const runOnPilot = (timeout: string[]) => runOn('pilot', timeout);
    const first = await runOnPilot(['--timeout', '30s']);
    const second = await runOnPilot(['--timeout', '30s']);
    const third = await runOnPilot(['--timeout', '30s']);
    assert.equal(first.reused, false);
    for (const next of [second, third]) {
      assert.deepEqual([next.slurmId, next.worker, next.reused], [first.slurmId, first.worker, true]);
    }
    // Each still names the worker it ran on, now that the pilot has run others.
    assert.equal((await getJob(api, adminToken, first.id)).worker?.id, first.worker);
    // 119 s and the grace (2 s) do not fit in what is left of the pilot's 2 minutes: a fresh
    // worker, and the idle pilot is destroyed to make room (the factory holds one worker).
    const long = await runOnPilot(['--timeout', '119s']);
    assert.equal(long.reused, false);
    assert.notEqual(long.slurmId, first.slurmId);
    await goneFromSlurm(first.slurmId);
    // No timeout: it needs a worker's whole time limit, so never a pilot.
    const unbounded = await runOnPilot([]);
    assert.equal(unbounded.reused, false);
    assert.notEqual(unbounded.slurmId, long.slurmId);
    // Idle past its idleTimeout (12 s: long enough for the next `berth submit --wait` to start on a
    // busy machine), the last pilot is destroyed.
    await goneFromSlurm(unbounded.slurmId);
    const w = await waitFor('the idle pilot to be destroyed', async () => {
      const list = (await call<{ id: number; state: string }[]>(api, adminToken, 'GET', '/workers')).body;
      const mine = list.find((x) => x.id === unbounded.worker);
      return mine?.state === 'destroyed' && mine;
    });
    assert.ok(w);
  });

  it("gives jobs without a timeout their target's defaultTimeout, so they run on one pilot", async () => {
    const first = await runOn('pilotdefault', []);
    const second = await runOn('pilotdefault', []);
    assert.deepEqual([first.timeout, first.reused], [30, false]);
    assert.deepEqual(
      [second.timeout, second.slurmId, second.worker, second.reused],
      [30, first.slurmId, first.worker, true],
    );
  });

  it("ends a job without a timeout at its worker's Slurm time limit, saying so", async () => {
    // timeLimit 1m: Slurm's controller checks limits every 30 s, so it signals the worker 60–90 s
    // after it started; its agent stops the job and reports why.
    const started = Date.now();
    const id = submitted(ok(await ctx.admin(['submit', '--target', 'minute', '--', 'sleep', '300'])));
    const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 150_000);
    assert.equal(done.state, 'failed');
    assert.match(
      done.reason,
      /worker lost: its agent was stopped by SIGTERM \(scancel, the worker's time limit/,
    );
    const took = Date.now() - started;
    assert.ok(took >= 55_000, `ended after ${took} ms, before its time limit`);
  });

  it("fails a job whose node fails, with Slurm's state in the reason, within Slurm's bound", async () => {
    const id = submitted(ok(await ctx.admin(['submit', '--target', 'onn2', '--', 'sleep', '300'])));
    await waitFor(
      'the job to run on n2',
      async () => (await getJob(ctx.server.api, ctx.server.adminToken, id)).state === 'running',
    );
    const slurmId = await slurmJobOf(id);
    const killedAt = Date.now();
    await run('bash', [CLUSTER_SH, 'node-kill', 'n2']);
    try {
      // Slurm marks the node DOWN within 25 s of its slurmd's death (scripts/slurm/README.md) and
      // ends its jobs NODE_FAIL; the factory's next squeue (0.5 s) reports the worker lost.
      const done = await waitDone(ctx.server.api, ctx.server.adminToken, id, 60_000);
      assert.equal(done.state, 'failed');
      assert.match(done.reason, new RegExp(`worker lost: Slurm job ${slurmId} ended NODE_FAIL`));
      const took = Date.now() - killedAt;
      assert.ok(took < 35_000, `found after ${took} ms`);
    } finally {
      await run('bash', [CLUSTER_SH, 'node-start', 'n2']);
    }
    await goneFromSlurm(slurmId);
  });
});

describe('the slurm factory across a kill -9 of the server', { skip: slurmSkip() }, () => {
  const slurm = new SlurmCli();
  const dir = scratchDir('berth-slurm-adopt-');
  const configFile = join(dir, 'berth.yaml');
  const dataDir = join(dir, 'data');
  let server: ServerProcess | undefined;
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    writeFileSync(configFile, CONFIG.replace('heartbeatSeconds: 120', 'heartbeatSeconds: 10'));
  });
  after(async () => {
    if (server) await killHard(server);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes over running and pending workers by name, cancels an orphan, and the jobs go on', async () => {
    server = await spawnServer(dataDir, configFile);
    // At start, the server names the pilot targets whose jobs may come without a timeout.
    const said = await waitFor('the server to print its start-up lines', () => {
      const out = server!.output();
      return /^dashboard: /m.test(out) && out;
    });
    const warned = [
      ...said.matchAll(
        /^target "([^"]+)": reuse: true, but jobs submitted without a timeout never run on a pilot; set targets\.\1\.defaultTimeout/gm,
      ),
    ];
    assert.deepEqual(warned.map((m) => m[1]).sort(), ['heldpilot', 'pilot']);
    const flag = join(dir, 'go');
    const a = await submit(server.api, server.token, 'default', {
      command: [
        'sh',
        '-c',
        `echo "before $SLURM_JOB_ID"; while [ ! -e ${flag} ]; do sleep 0.2; done; echo after`,
      ],
    });
    // A pilot's first job, its worker held pending by Slurm.
    const b = await submit(server.api, server.token, 'default', { target: 'heldpilot', command: ['true'] });
    const view = () => server!;
    await waitFor(
      'job a to run',
      async () => (await getJob(view().api, view().token, a.id)).state === 'running',
    );
    await waitFor('job b to be held by Slurm', async () =>
      /JobHeldUser/.test((await getJob(view().api, view().token, b.id)).reason),
    );
    // Job a's own Slurm job, as it printed it: other servers' workers may have the same number.
    const slurmA = await waitFor("job a's Slurm job", async () => {
      const id = /^before (\d+)$/m.exec(
        (await call(view().api, view().token, 'GET', `/jobs/${a.id}/logs`)).text,
      )?.[1];
      return id === undefined ? undefined : (await slurm.jobs({ ids: [id] }))[0];
    });
    // This installation's names: berth-INSTALLATION-FACTORY-wWORKER.
    const prefix = slurmA.name.replace(/\d+$/, '');
    const workerB = (await getJob(view().api, view().token, b.id)).worker?.id;
    const slurmB = (await slurm.jobs({ namePrefix: prefix.replace(/-hpc-w$/, '-held-w') })).find(
      (j) => j.name.endsWith(`-held-w${workerB}`) && !isEndedState(j.state),
    );
    assert.ok(slurmB, `job b's Slurm job (worker ${workerB})`);
    // A Slurm job named as this installation's factory's, that no worker record names.
    const orphan = await slurm.submit({
      name: `${prefix}999999`,
      script: '#!/bin/sh\nexec sleep 300\n',
      partition: 'main',
      extraArgs: ['--hold'],
    });

    await killHard(server);
    server = await spawnServer(dataDir, configFile, { listen: new URL(server.url).host });

    for (const job of [a, b]) {
      const timeline = await waitFor(`job ${job.id}'s worker to be taken over`, async () => {
        const e = await events(view().api, view().token, job.id);
        return e.some((x) => x.type === 'worker-adopted') && e;
      });
      const slurmId = job === a ? slurmA.id : slurmB.id;
      assert.ok(
        timeline.some((e) =>
          e.message.includes(`taken over after the server restarted (Slurm job ${slurmId})`),
        ),
        JSON.stringify(timeline),
      );
    }
    await waitFor('the orphan to be cancelled', async () => {
      const j = (await slurm.jobs({ ids: [orphan] }))[0];
      return j === undefined || isEndedState(j.state);
    });
    assert.equal((await getJob(view().api, view().token, a.id)).state, 'running');
    // The pending worker shows Slurm's reason again, then registers once Slurm releases it.
    await waitFor('job b to show JobHeldUser again', async () =>
      /JobHeldUser/.test((await getJob(view().api, view().token, b.id)).reason),
    );
    // Its worker's agent has not started: a taken-over pilot is not lost for not asking for its
    // job (only a bounded wait can show that nothing happens: past heartbeatSeconds, 10 s).
    const adoptedAt = Date.now();
    await waitFor('the heartbeat period to pass', async () => Date.now() - adoptedAt > 12_000, 20_000);
    assert.equal((await getJob(view().api, view().token, b.id)).state, 'admitted');
    await run('scontrol', ['release', slurmB.id]);
    assert.equal((await waitDone(view().api, view().token, b.id, 60_000)).state, 'succeeded');

    writeFileSync(flag, '');
    const doneA = await waitDone(view().api, view().token, a.id, 60_000);
    assert.equal(doneA.state, 'succeeded', doneA.reason);
    const logs = (await call(view().api, view().token, 'GET', `/jobs/${a.id}/logs`)).text;
    assert.match(logs, new RegExp(`^before ${slurmA.id}\n(.|\n)*after`));
    // a's worker ends with its job; b's, a pilot, once idle for its idleTimeout (1 s).
    for (const id of [slurmA.id, slurmB.id])
      await waitFor(`Slurm job ${id} to end`, async () => {
        const j = (await slurm.jobs({ ids: [id] }))[0];
        return j === undefined || isEndedState(j.state);
      });
  });
});
