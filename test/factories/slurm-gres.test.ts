/**
 * GPUs on Slurm (docs/DEVICES.md, "Slurm"), on the real cluster of scripts/slurm, whose nodes
 * have two stand-in GPUs each as GRES: a factory with `gres: { gpu: gpu }` passes a job's
 * `gpu=N` as `--gres=gpu:N`, Slurm assigns that many, and the job sees what Slurm binds
 * (CUDA_VISIBLE_DEVICES); a pilot runs only jobs that ask for what it was allocated.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { events, submit, waitDone } from '../helpers/jobs.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';

const PROBE = 'echo "CUDA ${CUDA_VISIBLE_DEVICES:-none} JOB_GPUS ${SLURM_JOB_GPUS:-none}"';

describe('GPUs as Slurm GRES', { skip: slurmSkip() }, () => {
  let s: TestServer;
  const shared = scratchDir('berth-gres-');
  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    s = await startTestServer({
      config: [
        'graceSeconds: 2',
        'heartbeatSeconds: 120',
        'defaultTarget: hpc',
        'factories:',
        '  hpc: { kind: slurm, partition: main, capacity: 3, timeLimit: 2m, pollSeconds: 0.5, gres: { gpu: gpu } }',
        `  direct: { kind: slurm, partition: main, capacity: 1, timeLimit: 2m, pollSeconds: 0.5, sharedDir: ${shared}, gres: { gpu: gpu } }`,
        'targets:',
        '  hpc: { factory: hpc }',
        '  pilot: { factory: hpc, reuse: true, idleTimeout: 30s, defaultTimeout: 30s }',
        '  direct: { factory: direct }',
      ].join('\n'),
    });
    await call(s.api, s.adminToken, 'POST', '/cluster-queues', { name: 'gpus', quota: { gpu: '8' } });
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'ml', clusterQueue: 'gpus' });
  });
  after(async () => {
    await s?.close();
    rmSync(shared, { recursive: true, force: true });
  });

  const run = async (target: string, gpus?: number) => {
    const job = await submit(s.api, s.adminToken, 'ml', {
      script: PROBE,
      target,
      ...(gpus ? { requests: { gpu: String(gpus) } } : {}),
    });
    const done = await waitDone(s.api, s.adminToken, job.id, 60_000);
    assert.equal(done.state, 'succeeded', done.reason);
    const log = (await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`)).text;
    const m = /^CUDA (\S+) JOB_GPUS (\S+)$/m.exec(log);
    assert.ok(m, log);
    const reused = (await events(s.api, s.adminToken, job.id)).some((e) => e.type === 'worker-reused');
    return { cuda: m[1]!, jobGpus: m[2]!, worker: done.worker?.id, reused };
  };

  it('gives a job the GPUs it asked for, as Slurm binds them; none to a job that asked for none', async () => {
    const [one, two, none] = await Promise.all([run('hpc', 1), run('hpc', 2), run('hpc')]);
    assert.equal(one.cuda.split(',').length, 1, JSON.stringify(one));
    assert.deepEqual(two.cuda.split(',').sort(), ['0', '1']);
    assert.equal(two.jobGpus, two.cuda);
    assert.equal(none.cuda, 'none');
  });

  it('on a direct worker too (the batch script runs the job under Slurm)', async () => {
    assert.equal((await run('direct', 1)).cuda.split(',').length, 1);
  });

  it('runs on a pilot only the jobs that ask for what the pilot was allocated', async () => {
    const first = await run('pilot', 1);
    const second = await run('pilot', 1);
    assert.equal(second.reused, true, 'the same request runs on the pilot');
    assert.equal(second.worker, first.worker);
    const bigger = await run('pilot', 2);
    assert.equal(bigger.reused, false, 'two GPUs need a worker allocated two');
    assert.deepEqual(bigger.cuda.split(',').sort(), ['0', '1']);
  });
});
