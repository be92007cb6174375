/**
 * A job's process in an image (agent/sandbox.ts with an ImageRoot, through agent/job-process.ts):
 * the image pulled from a real registry into the cache, its filesystem the job's root under a
 * layer of the job's own, in the job's namespaces and under its uid. Root and bubblewrap needed.
 */
import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { JobProcess } from '../../src/agent/job-process.js';
import { probeSandbox } from '../../src/agent/sandbox-probe.js';
import type { ImageRoot } from '../../src/agent/sandbox.js';
import { ImageCache, type CachedImage } from '../../src/images/image-cache.js';
import { parseImageReference, pinned } from '../../src/images/reference.js';
import { pushImage, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';

const support = probeSandbox();
const UID = 2_000_417;

let registry: TestRegistry;
let work: string;
let image: CachedImage;
/**
 * The jobs' layers: in the system's temporary directory, whose filesystem an overlay's upper
 * layer can be on (under user-mode-linux the scratch directory is the host's, through hostfs,
 * which overlayfs takes read-only; its /tmp is a tmpfs).
 */
let layers: string;

before(async () => {
  if (!support.available) return;
  work = scratchDir('berth-image-run-');
  layers = mkdtempSync(join(tmpdir(), 'berth-image-layers-'));
  registry = await startRegistry(work);
  const digest = pushImage(work, registry, 'tools/busybox', '1', {
    files: { '/etc/only-here': 'from the image\n', '/srv/app/README': 'app\n' },
    env: ['PATH=/bin'],
    workingDir: '/srv/app',
  });
  image = await new ImageCache(join(work, 'cache')).ensure(
    pinned(parseImageReference(`${registry.host}/tools/busybox:1`), digest),
  );
});
after(async () => {
  await registry?.close();
  if (layers) rmSync(layers, { recursive: true, force: true });
});

let jobs = 0;

/** Runs `script` in the image (as `uid` when given); its exit code and output. */
async function run(
  script: string,
  uid?: number,
): Promise<{ code: number | null; out: string; workdir: string; layer: string }> {
  const n = ++jobs;
  const workdir = join(work, `job-${n}`, 'work');
  const layer = join(layers, `job-${n}`);
  mkdirSync(workdir, { recursive: true });
  mkdirSync(layer, { mode: 0o700 });
  if (uid !== undefined) chownSync(workdir, uid, uid);
  const root: ImageRoot = { rootfs: image.rootfs, layer, cwd: image.config.workingDir };
  const job = JobProcess.start({
    command: ['sh', '-c', script],
    workdir,
    env: { PATH: '/bin', WORKDIR: workdir },
    sandbox: { workdir, tmpBytes: 1 << 20 },
    image: root,
    ...(uid !== undefined ? { identity: { uid, gid: uid } } : {}),
  });
  let out = '';
  job.child.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  job.child.stderr!.setEncoding('utf8').on('data', (c: string) => (out += c));
  const code = await new Promise<number | null>((resolve) => job.child.once('close', (c) => resolve(c)));
  assert.equal(await job.gone(), true);
  return { code, out, workdir, layer };
}

describe('a job in an image', { skip: support.available ? undefined : support.why }, () => {
  it("sees the image's files, not the host's, from the image's working directory, as its own uid", async () => {
    const r = await run(
      'cat /etc/only-here; pwd; id -u; id -G; test -e /usr/bin/node && echo HOST; ls /',
      UID,
    );
    assert.equal(r.code, 0, r.out);
    const [file, cwd, uid, groups, ...root] = r.out.trim().split('\n');
    assert.equal(file, 'from the image');
    assert.equal(cwd, '/srv/app');
    assert.equal(uid, String(UID));
    assert.equal(groups, String(UID), 'no supplementary group');
    assert.ok(!root.includes('HOST'), "the host's /usr/bin/node is not there");
    assert.deepEqual(
      root.filter((e) => ['usr', 'home', 'root', 'opt', 'boot'].includes(e)),
      [],
      root.join(' '),
    );
  });

  it('writes to a layer of its own: the image stays as it was, and the next job sees none of it', async () => {
    const first = await run('echo changed > /etc/only-here && echo new > /etc/new && cat /etc/only-here');
    assert.equal(first.code, 0, first.out);
    assert.equal(first.out, 'changed\n');
    assert.equal(readFileSync(join(image.rootfs, 'etc', 'only-here'), 'utf8'), 'from the image\n');
    assert.equal(existsSync(join(image.rootfs, 'etc', 'new')), false);
    assert.equal(
      readFileSync(join(first.layer, 'upper', 'etc', 'new'), 'utf8'),
      'new\n',
      'the write is in its layer',
    );
    const second = await run('cat /etc/only-here; test -e /etc/new && echo LEAKED; true');
    assert.equal(second.out, 'from the image\n');
    // Its layer's root is unmounted with its mount namespace: nothing mounted is left behind.
    assert.deepEqual(readdirSync(join(first.layer, 'root')), []);
    assert.ok(!readFileSync('/proc/self/mountinfo', 'utf8').includes(first.layer));
  });

  it("has its working directory at its own path, written as its uid, a private /tmp, and cannot write the image's", async () => {
    const r = await run(
      'echo out > "$WORKDIR/result" && echo t > /tmp/t && cat /tmp/t; { echo x > /etc/only-here; } 2>/dev/null || echo refused',
      UID,
    );
    assert.equal(r.code, 0, r.out);
    assert.equal(r.out, 't\nrefused\n');
    assert.equal(readFileSync(join(r.workdir, 'result'), 'utf8'), 'out\n');
  });

  it('says a command the image lacks is not found', async () => {
    const layer = join(layers, 'not-found');
    mkdirSync(layer, { mode: 0o700 });
    const job = JobProcess.start({
      command: ['no-such-tool'],
      workdir: '/',
      env: { PATH: '/bin' },
      sandbox: { workdir: '/', tmpBytes: 1 << 20 },
      image: { rootfs: image.rootfs, layer, cwd: '/' },
      identity: { uid: UID, gid: UID },
    });
    assert.equal(await job.notRunnable, 'ENOENT');
    await job.gone();
  });
});
