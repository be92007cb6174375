/**
 * Jobs in OCI images, end to end (issue #41): submitted with `image` to a real server whose local
 * factory runs them in namespaces of their own, the images pulled from a real registry (Debian's
 * docker-registry on 127.0.0.1) where the test built and pushed them. Root and bubblewrap needed.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import type { CachedImageView } from '../../src/domain/image.js';
import { BERTH_ARGS } from '../helpers/berth-command.js';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { HOPPER, jobProcesses } from '../helpers/processes.js';
import { imageSkip, pushImage, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';
import { call } from '../helpers/server.js';
import { localConfig, logs, start, type Started } from '../helpers/started-server.js';
import { waitFor } from '../helpers/wait.js';

const support = probeSandbox();
const skip = imageSkip(support);

interface ImageJob {
  id: number;
  state: string;
  reason: string;
  image: string | null;
  imageDigest: string | null;
  command: string[];
  attempts: number;
}

describe('jobs in images', { skip }, () => {
  let registry: TestRegistry;
  let work: string;
  let s: Started;
  let digest: string;

  before(async () => {
    work = scratchDir('berth-image-jobs-');
    registry = await startRegistry(work);
    digest = pushImage(work, registry, 'team/tools', '1', {
      files: { '/etc/only-here': 'from the image\n', '/srv/README': 'its working directory\n' },
      env: ['PATH=/bin', 'FROM_IMAGE=yes'],
      workingDir: '/srv',
      cmd: ['cat', '/etc/only-here'],
    });
    s = await start(
      [
        // Every job asks its registry: one test moves a tag and looks at once.
        'images: { tagCacheSeconds: 0 }',
        localConfig(),
        `  allowed: { factory: local, registries: ["${registry.host}"] }`,
        `  elsewhere: { factory: local, registries: ["registry.example.org"] }`,
      ].join('\n'),
    );
  });
  after(async () => {
    await s?.close();
    await registry?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const job = async (id: number) => (await getJob(s.api, s.token, id)) as unknown as ImageJob;

  it("runs the command in the image: its files, its environment, its working directory, as a uid of the job's own", async () => {
    const j = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      script:
        'cat /etc/only-here; echo "FROM_IMAGE=$FROM_IMAGE"; pwd; id -u; test -e /usr/bin/node && echo HOST; exit 0',
    });
    const done = await waitDone(s.api, s.token, j.id);
    assert.equal(done.state, 'succeeded', `${done.reason}: ${await logs(s, j.id)}`);
    const out = (await logs(s, j.id)).trim().split('\n');
    assert.equal(out[0], 'from the image');
    assert.equal(out[1], 'FROM_IMAGE=yes');
    assert.equal(out[2], '/srv');
    assert.notEqual(out[3], '0', 'not root');
    assert.ok(!out.includes('HOST'), "the host's files are not there");
    const view = await job(j.id);
    assert.equal(view.image, `${registry.host}/team/tools:1`);
    assert.equal(view.imageDigest, digest, 'pinned to what the registry served');
    const timeline = await events(s.api, s.token, j.id);
    assert.ok(
      timeline.some((e) => e.type === 'image-pinned' && e.message.includes(digest)),
      JSON.stringify(timeline),
    );
    // Its layer went with its worker.
    assert.deepEqual(readdirSync(join(s.dataDir, 'image-layers')), []);
  });

  it("runs the image's own command when the job gives none", async () => {
    const r = await call<ImageJob>(s.api, s.token, 'POST', '/projects/default/jobs', {
      image: `${registry.host}/team/tools:1`,
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(r.body.command, []);
    const done = await waitDone(s.api, s.token, r.body.id);
    assert.equal(done.state, 'succeeded', done.reason);
    assert.equal(await logs(s, r.body.id), 'from the image\n');
  });

  it("fails a job at once, with the registry's words, when the tag does not exist: no retry", async () => {
    const j = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:no-such-tag`,
      command: ['true'],
      retries: 3,
      infraRetries: 3,
    });
    const done = (await waitDone(s.api, s.token, j.id)) as unknown as ImageJob;
    assert.equal(done.state, 'failed');
    assert.match(done.reason, /^image 127\.0\.0\.1:\d+\/team\/tools:no-such-tag: .*manifest unknown/);
    assert.equal(done.attempts, 0, 'never retried');
  });

  it('pulls an image once for two jobs that want it at the same time', async () => {
    const second = pushImage(work, registry, 'team/pair', '1', { files: { '/etc/pair': 'pair\n' } });
    const blobs = () =>
      registry.requests().filter((r) => r.startsWith('GET ') && r.includes('/team/pair/blobs/')).length;
    const jobs = await Promise.all(
      [0, 1].map(() =>
        submit(s.api, s.token, 'default', {
          image: `${registry.host}/team/pair:1`,
          command: ['cat', '/etc/pair'],
        }),
      ),
    );
    for (const j of jobs) {
      const done = await waitDone(s.api, s.token, j.id);
      assert.equal(done.state, 'succeeded', `${done.reason}: ${await logs(s, j.id)}`);
      assert.equal(await logs(s, j.id), 'pair\n');
      assert.equal((await job(j.id)).imageDigest, second);
    }
    // Its config and one layer: each fetched once (a second pull would fetch both again).
    assert.equal(blobs(), 2, registry.requests().join('\n'));
  });

  it('runs every attempt of a job on the bytes it was pinned to, though its tag moves', async () => {
    pushImage(work, registry, 'team/moving', 'v', { files: { '/etc/version': 'one\n' } });
    const j = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/moving:v`,
      // Fails each time: retried once, after the test has moved the tag.
      script: 'cat /etc/version; exit 1',
      retries: 1,
      retryBackoffSeconds: 0,
    });
    await waitFor('its image pinned', async () => (await job(j.id)).imageDigest ?? undefined);
    pushImage(work, registry, 'team/moving', 'v', { files: { '/etc/version': 'two\n' } });
    const done = (await waitDone(s.api, s.token, j.id)) as unknown as ImageJob;
    assert.equal(done.state, 'failed');
    assert.equal(done.attempts, 1, 'retried once');
    for (const attempt of [1, 2]) {
      const r = await call(s.api, s.token, 'GET', `/jobs/${j.id}/logs?attempt=${attempt}`);
      assert.equal(r.text, 'one\n', `attempt ${attempt}`);
    }
    const fresh = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/moving:v`,
      command: ['cat', '/etc/version'],
    });
    await waitDone(s.api, s.token, fresh.id);
    assert.equal(await logs(s, fresh.id), 'two\n', 'a new job gets what the tag is now');
  });

  it('refuses an image reference that is not one (400), and a registry its target does not allow (422)', async () => {
    const bad = await call(s.api, s.token, 'POST', '/projects/default/jobs', {
      image: 'Team/Tools:1',
      command: ['true'],
    });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.text, /image \\"Team\/Tools:1\\": \\"Team\\" is not a repository name component/);
    const elsewhere = await call(s.api, s.token, 'POST', '/projects/default/jobs', {
      image: `${registry.host}/team/tools:1`,
      target: 'elsewhere',
      command: ['true'],
    });
    assert.equal(elsewhere.status, 422, elsewhere.text);
    assert.match(elsewhere.text, /registry 127\.0\.0\.1:\d+ is not one target \\"elsewhere\\" allows/);
    const targets = (
      await call<{ name: string; registries: string[] | null; imagesRefused: string | null }[]>(
        s.api,
        s.token,
        'GET',
        '/targets',
      )
    ).body;
    assert.deepEqual(
      targets.map((t) => [t.name, t.registries, t.imagesRefused]),
      [
        ['local', null, null],
        ['allowed', [registry.host], null],
        ['elsewhere', ['registry.example.org'], null],
      ],
      'berth targets says which registries each allows',
    );
    const allowed = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      target: 'allowed',
      command: ['echo', 'allowed'],
    });
    const done = await waitDone(s.api, s.token, allowed.id);
    assert.equal(done.state, 'succeeded', `${done.reason}: ${await logs(s, allowed.id)}`);
  });

  it('counts pulls, their bytes and cache hits in GET /metrics', async () => {
    const metric = async (name: string) => {
      const text = (await call(s.api, s.token, 'GET', '/metrics')).text;
      return Number(new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    };
    const figures = async () => ({
      pulled: await metric('berth_image_pulls_total{outcome="pulled"}'),
      bytes: await metric('berth_image_pull_bytes_total'),
      hits: await metric('berth_image_cache_hits_total'),
    });
    const before = await figures();
    const cached = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      command: ['echo', 'ok'],
    });
    await waitDone(s.api, s.token, cached.id);
    const hit = await figures();
    assert.deepEqual(hit, { ...before, hits: before.hits + 1 }, 'a cached image: a hit, no pull');
    pushImage(work, registry, 'team/metered', '1', { fillerMegabytes: 2 });
    const fresh = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/metered:1`,
      command: ['echo', 'ok'],
    });
    await waitDone(s.api, s.token, fresh.id);
    const pulled = await figures();
    assert.equal(pulled.pulled, hit.pulled + 1, 'one pull more');
    assert.equal(pulled.hits, hit.hits);
    assert.ok(pulled.bytes - hit.bytes >= 2 << 20, `${pulled.bytes - hit.bytes} bytes fetched`);
  });

  it('lists the cached images for admins (berth images) and prunes those no job holds, never a held one', async () => {
    const held = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      command: ['sleep', '30'],
    });
    await waitFor('the job to run', async () => (await job(held.id)).state === 'running' || undefined);
    const listed = await call<CachedImageView[]>(s.api, s.token, 'GET', '/images');
    assert.equal(listed.status, 200, listed.text);
    const tools = listed.body.find((i) => i.digest === digest);
    assert.deepEqual(
      tools && { reference: tools.reference, jobs: tools.jobs },
      { reference: `${registry.host}/team/tools:1`, jobs: [held.id] },
      JSON.stringify(listed.body),
    );
    assert.ok(listed.body.length >= 3 && listed.body.every((i) => i.bytes > 0), JSON.stringify(listed.body));
    // The CLI's table, as an admin sees it.
    // Not a synchronous child: the server answering it runs in this process.
    const { stdout: cli } = await promisify(execFile)(process.execPath, [...BERTH_ARGS, 'images'], {
      env: { ...process.env, BERTH_URL: s.server.url, BERTH_TOKEN: s.token },
      encoding: 'utf8',
    });
    assert.match(
      cli,
      new RegExp(
        `^${registry.host.replace(/\./g, '\\.')}/team/tools:1 +sha256:${digest.slice(7, 19)} .* ${held.id}$`,
        'm',
      ),
    );

    const pruned = await call<CachedImageView[]>(s.api, s.token, 'POST', '/images/prune');
    assert.equal(pruned.status, 200, pruned.text);
    assert.deepEqual(
      pruned.body.map((i) => i.digest).sort(),
      listed.body
        .filter((i) => i.digest !== digest)
        .map((i) => i.digest)
        .sort(),
      'every image but the held one',
    );
    const left = (await call<CachedImageView[]>(s.api, s.token, 'GET', '/images')).body;
    assert.deepEqual(
      left.map((i) => i.digest),
      [digest],
    );
    const audit = (
      await call<{ action: string; detail: { bytes: number } }[]>(s.api, s.token, 'GET', '/audit')
    ).body;
    const entry = audit.find((e) => e.action === 'image.prune');
    assert.equal(
      entry?.detail.bytes,
      pruned.body.reduce((n, i) => n + i.bytes, 0),
      JSON.stringify(audit),
    );
    await call(s.api, s.token, 'POST', `/jobs/${held.id}/cancel`);
    await waitDone(s.api, s.token, held.id);
  });

  it('shows the images to admins only', async () => {
    const token = (await call<{ token: string }>(s.api, s.token, 'POST', '/users', { name: 'mallory' })).body
      .token;
    for (const [method, path] of [
      ['GET', '/images'],
      ['POST', '/images/prune'],
    ] as const) {
      const r = await call(s.api, token, method, path);
      assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
      assert.match(r.text, /only admins/);
    }
  });

  it('confines a job in an image as any job: a daemon hopping pids ends with it, its memory request holds', async () => {
    // confinement.test.ts's hopper, its beacon in the job's home (the host's paths are not in the image).
    const hopper = `export BEACON="$HOME/beacon"\n${HOPPER}`;
    const daemon = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      script: hopper,
    });
    const ended = await waitDone(s.api, s.token, daemon.id);
    assert.equal(ended.state, 'succeeded', `${ended.reason}: ${await logs(s, daemon.id)}`);
    assert.match(await logs(s, daemon.id), /^hopper-started$/m);
    assert.deepEqual(
      jobProcesses(s.server, daemon.id),
      [],
      'nothing of it runs once it is recorded as ended',
    );

    const enforced = s.lines.some((l) => /requests enforced by cgroup/.test(l));
    if (!enforced) return; // a machine whose cgroups berth cannot use: the pid namespace alone holds it
    const hog = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      // As test/jobs/enforce.test.ts: tail keeps its input until a line ends, and /dev/zero has none.
      script: 'head -c 629145600 /dev/zero | tail',
      requests: { memory: '64Mi' },
    });
    const done = await waitDone(s.api, s.token, hog.id);
    assert.equal(done.state, 'failed', await logs(s, hog.id));
    assert.match(done.reason, /out of memory \(limit 64Mi\)/);
  });

  it('runs a command in an image without a shell (distroless), looked up in its files', async () => {
    pushImage(work, registry, 'team/distroless', '1', {
      applets: ['cat'],
      files: { '/etc/greeting': 'no shell here\n', '/opt/tool': 'not executable\n' },
      env: ['PATH=/opt:/bin'],
    });
    const image = `${registry.host}/team/distroless:1`;
    const ok = await submit(s.api, s.token, 'default', { image, command: ['cat', '/etc/greeting'] });
    const done = await waitDone(s.api, s.token, ok.id);
    assert.equal(done.state, 'succeeded', `${done.reason}: ${await logs(s, ok.id)}`);
    assert.equal(await logs(s, ok.id), 'no shell here\n');
    for (const [body, reason] of [
      [{ command: ['nope'] }, 'cannot run "nope": command not found'],
      [{ script: 'echo hi' }, 'cannot run "/bin/sh": command not found'],
      // Found first on PATH, but not executable; nothing later runs either.
      [{ command: ['tool'] }, 'cannot run "tool": permission denied'],
    ] as const) {
      const j = await submit(s.api, s.token, 'default', { image, ...body });
      const failed = await waitDone(s.api, s.token, j.id);
      assert.equal(failed.state, 'failed');
      assert.equal(failed.reason, reason);
      assert.equal(await logs(s, j.id), `berth: ${reason}\n`);
    }
  });

  it("keeps a job's artifacts from its working directory, its home, as without an image", async () => {
    const j = await submit(s.api, s.token, 'default', {
      image: `${registry.host}/team/tools:1`,
      // Its working directory is its home, mounted at its own path inside the image.
      script: 'cd "$BERTH_WORKDIR" && echo result > out.txt && test "$HOME" = "$BERTH_WORKDIR" && echo ok',
      artifacts: ['out.txt'],
    });
    const done = await waitDone(s.api, s.token, j.id);
    assert.equal(done.state, 'succeeded', `${done.reason}: ${await logs(s, j.id)}`);
    const listed = await call<{ name: string; size: number }[]>(
      s.api,
      s.token,
      'GET',
      `/jobs/${j.id}/artifacts`,
    );
    assert.deepEqual(
      listed.body.map((a) => [a.name, a.size]),
      [['out.txt', 7]],
    );
    const file = await call(s.api, s.token, 'GET', `/jobs/${j.id}/artifacts/out.txt`);
    assert.equal(file.text, 'result\n');
  });
});
