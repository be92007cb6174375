/**
 * Jobs in OCI images are confined as every job is (issue #41): a real server's local factory with
 * cgroups required runs them in their image and in the same groups and namespaces — a job over
 * its memory request is killed and says so, a fork bomb meets its pids limit while another job
 * runs, a job sees neither another job's processes nor its /tmp. Here on cgroup v1; on cgroup v2
 * inside user-mode-linux (test/security/uml.test.ts runs this file there).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { PassThrough } from 'node:stream';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import type { Connection } from '../../src/cli/connection.js';
import { runExec } from '../../src/cli/exec-stream.js';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { imageSkip, pushImage, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { scratchDir, SHARED_TMP } from '../helpers/scratch.js';
import { call } from '../helpers/server.js';
import { localConfig, logs, start, type Started } from '../helpers/started-server.js';
import { waitFor } from '../helpers/wait.js';

const skip = imageSkip(probeSandbox());
/** statfs's type of hostfs (user-mode-linux's view of its host's files), where scratch directories are there. */
const onHostfs = Number(statfsSync(SHARED_TMP).type) === 0x00c0ffee;

describe('jobs in images, confined', { skip }, () => {
  let registry: TestRegistry;
  let work: string;
  let s: Started;
  let image: string;
  let layers: string;

  before(async () => {
    work = scratchDir('berth-image-confinement-');
    registry = await startRegistry(work);
    pushImage(work, registry, 'team/box', '1', {
      files: { '/etc/only-here': 'from the image\n' },
      env: ['PATH=/bin'],
      applets: ['sh', 'cat', 'echo', 'ls', 'sleep', 'test', 'dd', 'grep', 'touch'],
    });
    image = `${registry.host}/team/box:1`;
    // Layers on the system's temporary directory: on user-mode-linux the scratch directory (the
    // data directory's) is the host's, through hostfs, where overlayfs cannot write.
    layers = mkdtempSync(join(tmpdir(), 'berth-layers-'));
    s = await start(
      [`images: { layersDir: ${layers} }`, localConfig(', cgroups: required, pidsLimit: 64')].join('\n'),
    );
  });
  after(async () => {
    await s?.close();
    await registry?.close();
    if (work) rmSync(work, { recursive: true, force: true });
    if (layers) rmSync(layers, { recursive: true, force: true });
  });

  it('kills a job in an image over its memory request, and says so', async () => {
    // Into its own /dev/shm (a tmpfs whose pages count against the job), in 1 MiB writes: few
    // system calls, which under user-mode-linux each cost a round trip through ptrace.
    const job = await submit(s.api, s.token, 'default', {
      image,
      // dd is the job's command: v1's killer takes the largest process, v2's the whole group.
      script: 'cat /etc/only-here; exec dd if=/dev/zero of=/dev/shm/fill bs=1M count=256 2>/dev/null',
      requests: { memory: '64Mi' },
    });
    const done = await waitDone(s.api, s.token, job.id);
    const out = await logs(s, job.id);
    assert.equal(done.state, 'failed', done.reason);
    assert.match(done.reason, /out of memory \(limit 64Mi\)/, out);
    assert.match(out, /^from the image$/m, 'it ran in the image');
  });

  it("stops a fork bomb in an image at its pids limit, while another job runs; neither sees the other's processes nor /tmp", async () => {
    const bomb = await submit(s.api, s.token, 'default', {
      image,
      script: 'touch /tmp/bomb-was-here; b() { b | b & }; b; sleep 3; echo bombed',
      timeoutSeconds: 20,
    });
    await waitFor('the bomb to run', async () => (await getJob(s.api, s.token, bomb.id)).state === 'running');
    const other = await submit(s.api, s.token, 'default', {
      image,
      script: [
        'cat /etc/only-here',
        // Its own processes alone: its shell, and what it runs now (ls).
        'n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo "processes $n"',
        // The bomb's marker, never whole in this job's own command line.
        'm=bomb-was',
        // Matched by the shell itself: no process of this job carries the whole marker.
        'c=0; for f in /proc/[0-9]*/cmdline; do case "$(cat $f 2>/dev/null)" in *"$m-here"*) c=$((c+1));; esac; done; echo $c',
        'test -e "/tmp/$m-here" && echo "bomb tmp seen" || echo "tmp private"',
      ].join('; '),
    });
    const otherDone = await waitDone(s.api, s.token, other.id, 120_000);
    assert.equal(otherDone.state, 'succeeded', `${otherDone.reason}: ${await logs(s, other.id)}`);
    const out = (await logs(s, other.id)).trim().split('\n');
    assert.equal(out[0], 'from the image');
    assert.ok(
      Number(/^processes (\d+)$/.exec(out[1] ?? '')?.[1]) <= 3,
      `a process view of its own: ${out[1]}`,
    );
    assert.equal(out[2], '0', "no process of the bomb's in its view");
    assert.equal(out[3], 'tmp private');
    // It ends (by itself or its timeout), and nothing of it is left.
    await waitDone(s.api, s.token, bomb.id, 120_000);
  });

  it("runs berth exec inside an image job: in the image's root, as the job's uid", async () => {
    const j = await submit(s.api, s.token, 'default', { image, script: 'exec sleep 120' });
    await waitFor('the job to run', async () => (await getJob(s.api, s.token, j.id)).state === 'running');
    const out = new PassThrough();
    const err = new PassThrough();
    let text = '';
    out.on('data', (b: Buffer) => (text += b.toString()));
    err.on('data', (b: Buffer) => (text += b.toString()));
    const base = s.api.replace(/\/api\/v1$/, '');
    const code = await runExec(
      { url: base, token: s.token } as Connection,
      j.id,
      ['sh', '-c', 'cat /etc/only-here; id -u'],
      0,
      {
        stdout: out,
        stderr: err,
      },
    );
    assert.equal(code, 0, text);
    const [file, uid] = text.trim().split('\n');
    assert.equal(file, 'from the image');
    assert.ok(Number(uid) >= 1000, `as the job's uid: ${uid}`);
    await call(s.api, s.token, 'POST', `/jobs/${j.id}/cancel`);
  });

  it(
    'refuses images, saying why, where the layers would be on a filesystem overlayfs cannot write',
    {
      skip: onHostfs
        ? false
        : 'only under user-mode-linux is the data directory on such a filesystem (hostfs)',
    },
    async () => {
      const refusing = await start(localConfig());
      try {
        const why = /^images: local targets refuse them: (.*)$/m.exec(refusing.lines.join('\n'))?.[1];
        assert.match(why ?? '', /on hostfs .*set images\.layersDir to a local filesystem/);
        const r = await call(refusing.api, refusing.token, 'POST', '/projects/default/jobs', {
          image,
          command: ['true'],
        });
        assert.equal(r.status, 422, r.text);
        assert.match(r.text, /hostfs/);
      } finally {
        await refusing.close();
      }
    },
  );
});
