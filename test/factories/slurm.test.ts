/**
 * The slurm factory end to end, on real Slurm (scripts/slurm/cluster.sh: slurmctld and three
 * slurmd on this machine): `berth` → API → scheduler → sbatch → `berth agent` on a node →
 * logs back. What only a Slurm worker does: Slurm's pending reason as the job's blocker, a node
 * failure ending the job with Slurm's state, the agent's one-time credential kept from the job.
 * (The Factory contract, restarts and kill -9 included, is the conformance suite's.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { isEndedState, SlurmCli } from '../../src/factories/slurm/slurm-cli.js';
import { shellQuote } from '../../src/factories/slurm/slurm-factory.js';
import { fails, ok, useCliServer } from '../cli/cli.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';
import { waitFor } from '../helpers/wait.js';

const CLUSTER_SH = join(import.meta.dirname, '..', '..', 'scripts', 'slurm', 'cluster.sh');
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
  'targets:',
  '  hpc: { factory: hpc }',
  '  held: { factory: held }',
  '  onn2: { factory: onn2 }',
].join('\n');

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
    const named = (await slurm.jobs({ namePrefix: 'berth-' })).find((j) => j.name.endsWith(`-w${worker}`));
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
