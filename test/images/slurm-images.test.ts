/**
 * Jobs in OCI images on Slurm (issue #41), on the real cluster of scripts/slurm: berth submits as
 * root, each node's `berth agent` pulls the job's image into the node's cache — one cache for
 * every agent of the node (the test's three slurmd share this machine, so one directory) — with
 * the project's registry login, which the server gives the agent and never the job, and runs the
 * job in it under a uid of its own; a pilot runs one image job after another.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { waitFor } from '../helpers/wait.js';
import { imageSkip, pushImage, startRegistry, TEST_LOGIN, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { slurmSkip, startSlurm } from '../helpers/slurm.js';

const skip = slurmSkip() || imageSkip(probeSandbox());

describe('jobs in images on Slurm', { skip }, () => {
  let s: TestServer;
  let registry: TestRegistry;
  let work: string;
  let nodeCache: string;
  let digest: string;

  before(async () => {
    Object.assign(process.env, (await startSlurm()).env);
    work = scratchDir('berth-slurm-images-');
    nodeCache = join(work, 'node-cache');
    registry = await startRegistry(work, { private: true });
    digest = pushImage(work, registry, 'team/tools', '1', {
      files: { '/etc/only-here': 'from the image\n' },
      env: ['PATH=/bin', 'FROM_IMAGE=yes'],
      cmd: ['cat', '/etc/only-here'],
    });
    // The key every replica would share (on PostgreSQL there is no default: docs/IMAGES.md).
    writeFileSync(join(work, 'secret.key'), randomBytes(32).toString('base64'), { mode: 0o600 });
    s = await startTestServer({
      config: [
        'graceSeconds: 2',
        'heartbeatSeconds: 120',
        'defaultTarget: hpc',
        `secretKeyFile: ${join(work, 'secret.key')}`,
        'factories:',
        `  hpc: { kind: slurm, partition: main, capacity: 2, timeLimit: 2m, pollSeconds: 0.5, imageCache: ${nodeCache} }`,
        // Its nodes cannot keep an image: its cache is under a file.
        '  nowhere: { kind: slurm, partition: main, capacity: 1, timeLimit: 2m, pollSeconds: 0.5, imageCache: /dev/null/images }',
        'targets:',
        '  hpc: { factory: hpc }',
        '  pilot: { factory: hpc, reuse: true, idleTimeout: 20s, defaultTimeout: 30s }',
        '  nowhere: { factory: nowhere }',
      ].join('\n'),
    });
    const login = await call(
      s.api,
      s.adminToken,
      'PUT',
      `/projects/default/registries/${registry.host}`,
      TEST_LOGIN,
    );
    assert.equal(login.status, 200, login.text);
  });
  after(async () => {
    await s?.close();
    await registry?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const log = async (id: number) => (await call(s.api, s.adminToken, 'GET', `/jobs/${id}/logs`)).text;
  const run = async (body: Record<string, unknown>) => {
    const j = await submit(s.api, s.adminToken, 'default', body);
    const done = await waitDone(s.api, s.adminToken, j.id, 90_000);
    return { done, log: await log(j.id) };
  };
  /** Pulls of team/tools from the registry so far (each fetches its two blobs). */
  const pulls = () => registry.requests().filter((r) => r.startsWith('GET /v2/team/tools/blobs/')).length / 2;

  it("runs the job in its image on a node, as a uid of its own, pulled once into the node's cache with the project's login", async () => {
    const image = `${registry.host}/team/tools:1`;
    const probe =
      'cat /etc/only-here; echo "FROM_IMAGE=$FROM_IMAGE"; id -u; env | grep -c BERTH_AGENT_CREDENTIAL; true';
    const first = await run({ image, script: probe });
    assert.equal(first.done.state, 'succeeded', `${first.done.reason}\n${first.log}`);
    const out = first.log.trim().split('\n');
    assert.equal(out[0], 'from the image');
    assert.equal(out[1], 'FROM_IMAGE=yes');
    assert.ok(Number(out[2]) >= 1000, `ran as uid ${out[2]}, not root`);
    assert.equal(out[3], '0', 'nothing of the agent in the environment');
    assert.doesNotMatch(first.log, new RegExp(TEST_LOGIN.password));
    const pinned = (await events(s.api, s.adminToken, first.done.id)).find((e) => e.type === 'image-pinned');
    assert.match(pinned?.message ?? '', new RegExp(digest.replace(':', ':')), 'pinned to the pushed digest');

    // Two more at once, on whichever nodes: the node's cache serves them, no pull of their own.
    const before = pulls();
    const [second, third] = await Promise.all([run({ image }), run({ image })]);
    for (const r of [second, third]) {
      assert.equal(r.done.state, 'succeeded', `${r.done.reason}\n${r.log}`);
      assert.equal(r.log, 'from the image\n', "the image's own command (its Cmd)");
    }
    assert.equal(pulls(), before, 'served from the node cache');
    // One image in the cache; no layer, hold or pull of a job left behind.
    const entries = readdirSync(nodeCache).sort();
    assert.deepEqual(entries, ['.holds', '.layers', digest.replace(':', '-')]);
    assert.deepEqual(readdirSync(join(nodeCache, '.layers')), [], 'every layer removed with its job');
    assert.deepEqual(readdirSync(join(nodeCache, '.holds')), [], 'every hold let go');
  });

  it("says the node's pull as the job's reason while it pulls", async () => {
    pushImage(work, registry, 'team/big', '1', { fillerMegabytes: 48 });
    const j = await submit(s.api, s.adminToken, 'default', {
      image: `${registry.host}/team/big:1`,
      command: ['sh', '-c', 'exit 0'],
    });
    const reasons = new Set<string>();
    const done = await waitFor(
      'the job to end',
      async () => {
        const v = await getJob(s.api, s.adminToken, j.id);
        if (v.state === 'admitted') reasons.add(v.reason);
        return ['succeeded', 'failed'].includes(v.state) ? v : undefined;
      },
      90_000,
    );
    assert.equal(done.state, 'succeeded', done.reason);
    assert.ok(
      [...reasons].some((r) => /^(pulling|unpacking) image 127\.0\.0\.1:\d+\/team\/big:1/.test(r)),
      [...reasons].join('\n'),
    );
  });

  it('runs image jobs one after another on a pilot', async () => {
    const image = `${registry.host}/team/tools:1`;
    const a = await run({ image, target: 'pilot', script: 'cat /etc/only-here' });
    assert.equal(a.done.state, 'succeeded', `${a.done.reason}\n${a.log}`);
    const b = await run({ image, target: 'pilot' });
    assert.equal(b.done.state, 'succeeded', `${b.done.reason}\n${b.log}`);
    assert.equal(b.done.worker?.id, a.done.worker?.id, 'the same pilot ran both');
    assert.equal(a.log, 'from the image\n');
    assert.equal(b.log, 'from the image\n');
  });

  it("fails a job whose node cannot have its image as the infrastructure's failure, saying why", async () => {
    const { done } = await run({
      image: `${registry.host}/team/tools:1`,
      target: 'nowhere',
      infraRetries: 1,
      retryBackoffSeconds: 0,
    });
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /cannot run image .*team\/tools:1@sha256:\w+ on n\d: .*ENOTDIR/);
    const attempts = (
      await call<{ charged: string; outcome: string }[]>(
        s.api,
        s.adminToken,
        'GET',
        `/jobs/${done.id}/attempts`,
      )
    ).body;
    assert.deepEqual(
      attempts.map((a) => a.outcome),
      ['retried', 'failed'],
    );
    assert.equal(attempts[0]!.charged, 'infrastructure', "retried on the infrastructure's budget");
    assert.equal((done as { infraRetried?: number }).infraRetried, 1);
  });
});
