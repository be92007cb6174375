/**
 * Images pulled from a real registry (Debian's docker-registry on 127.0.0.1, images built here with
 * umoci and pushed with skopeo) into the cache of images/image-cache.ts: resolved to a digest,
 * pulled once however many ask, unpacked whole, failures said with the registry's words and whose
 * they are, and a pull killed with SIGKILL leaves nothing that is used.
 */
import assert from 'node:assert/strict';
import { spawn, type StdioOptions } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ImageCache, type PullProgress } from '../../src/images/image-cache.js';
import { parseImageReference, pinned } from '../../src/images/reference.js';
import { RegistryError, resolveDigest } from '../../src/images/skopeo.js';
import { pushImage, startRegistry, type TestRegistry } from '../helpers/registry.js';
import { scratchDir } from '../helpers/scratch.js';
import { waitFor } from '../helpers/wait.js';
import { alive } from '../helpers/processes.js';

/** The skopeo and umoci processes whose command line names `text`. */
function toolsNaming(text: string): number[] {
  return readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
        return /^\/usr\/bin\/(skopeo|umoci)$/.test(argv[0]!) && argv.some((a) => a.includes(text));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** A module of src/ as this run has it: the sources (through tsx), or the tests' build. */
const own = (path: string) =>
  JSON.stringify(
    new URL(`../../src/${path}.${import.meta.url.endsWith('.ts') ? 'ts' : 'js'}`, import.meta.url).href,
  );

/**
 * A process of its own running `body` with ImageCache and parseImageReference imported: another
 * server's pull, or another agent of the same node.
 */
const cacheProcess = (body: string, stdio: StdioOptions) =>
  spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `import { ImageCache } from ${own('images/image-cache')};
       import { parseImageReference } from ${own('images/reference')};
       ${body}`,
    ],
    { stdio },
  );

let registry: TestRegistry;
let work: string;
let digest: string;

before(async () => {
  work = scratchDir('berth-images-');
  registry = await startRegistry(work);
  digest = pushImage(work, registry, 'tools/busybox', '1', {
    files: { '/etc/only-here': 'from the image\n' },
    cmd: ['cat', '/etc/only-here'],
    env: ['PATH=/bin', 'GREETING=hello'],
    workingDir: '/work',
  });
});
after(async () => registry?.close());

/** Manifest fetches by digest: one per pull (a tag's resolution asks by tag). */
/** Pulls of tools/busybox so far: its two blobs (its config, its one layer) are fetched by each. */
const pullsOf = () =>
  registry.requests().filter((r) => r.startsWith('GET /v2/tools/busybox/blobs/')).length / 2;

describe('the image cache', () => {
  it("resolves a tag to the registry's digest, and a digest to itself", async () => {
    const ref = parseImageReference(`${registry.host}/tools/busybox:1`);
    assert.equal(await resolveDigest(ref), digest);
    assert.equal(await resolveDigest(pinned(ref, digest)), digest);
  });

  it('pulls an image once however many ask at once, and unpacks it whole with its config', async () => {
    const cache = new ImageCache(join(work, 'cache-once'));
    const ref = pinned(parseImageReference(`${registry.host}/tools/busybox:1`), digest);
    const before = pullsOf();
    const images = await Promise.all([cache.ensure(ref), cache.ensure(ref), cache.ensure(ref)]);
    assert.equal(pullsOf() - before, 1, 'one pull');
    for (const image of images) assert.deepEqual(image, images[0]);
    const image = images[0];
    assert.equal(image.digest, digest);
    assert.equal(readFileSync(join(image.rootfs, 'etc', 'only-here'), 'utf8'), 'from the image\n');
    assert.ok(existsSync(join(image.rootfs, 'bin', 'busybox')));
    assert.deepEqual(image.config.cmd, ['cat', '/etc/only-here']);
    assert.deepEqual(image.config.env, ['PATH=/bin', 'GREETING=hello']);
    assert.equal(image.config.workingDir, '/work');
    assert.ok(image.bytes > 500_000, `${image.bytes} bytes (busybox alone is more)`);
    // Later asks are served from disk, by a new cache on the same directory too.
    await cache.ensure(ref);
    assert.deepEqual(new ImageCache(join(work, 'cache-once')).cached(digest), image);
    assert.equal(pullsOf() - before, 1, 'still one pull');
  });

  const failures: [string, () => string, RegistryError['kind'], RegExp][] = [
    [
      'a tag the registry lacks',
      () => `${registry.host}/tools/busybox:nope`,
      'not-found',
      /manifest unknown/,
    ],
    [
      'an image the registry lacks',
      () => `${registry.host}/tools/nothing:1`,
      'not-found',
      /manifest unknown/,
    ],
    [
      'a registry nobody answers on',
      () => '127.0.0.1:9/tools/busybox:1',
      'unreachable',
      /connection refused/,
    ],
  ];
  for (const [what, text, kind, message] of failures)
    it(`says whose failure ${what} is, in the registry's words`, async () => {
      await assert.rejects(resolveDigest(parseImageReference(text())), (e: unknown) => {
        assert.ok(e instanceof RegistryError, String(e));
        assert.equal(e.kind, kind);
        assert.match(e.message, message);
        assert.doesNotMatch(e.message, /level=fatal|time=/);
        assert.equal(e.jobsFault, kind !== 'unreachable');
        return true;
      });
    });

  it('leaves nothing used of a pull killed with SIGKILL, and pulls whole next time', async () => {
    const big = pushImage(work, registry, 'tools/big', '1', { fillerMegabytes: 32 });
    const dir = join(work, 'cache-killed');
    const ref = `${registry.host}/tools/big@${big}`;
    // A process of its own pulls, and is killed while its pull is under way.
    const child = cacheProcess(
      `await new ImageCache(${JSON.stringify(dir)}).ensure(parseImageReference(${JSON.stringify(ref)}));`,
      'ignore',
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Caught with its skopeo (or umoci) at work, held there (SIGSTOP), and then killed itself.
    const tools = await waitFor('the pull to be under way', () => {
      const pids = toolsNaming(dir);
      return pids.length > 0 ? pids : undefined;
    });
    for (const pid of tools) process.kill(pid, 'SIGSTOP');
    child.kill('SIGKILL');
    await exited;
    try {
      // The tool dies with it, writing nothing more (held, it would never end on its own).
      await waitFor(
        "the killed pull's tools to die with it",
        () => tools.every((pid) => !alive(pid)),
        10_000,
      );
    } finally {
      for (const pid of tools.filter(alive)) process.kill(pid, 'SIGKILL');
    }
    assert.ok(
      readdirSync(dir).some((n) => n.startsWith('.partial-')),
      'the killed pull left its partial directory',
    );
    const cache = new ImageCache(dir);
    assert.deepEqual(readdirSync(dir), [], 'opened, the cache removed what the killed pull left');
    assert.equal(cache.cached(big), undefined);
    const image = await cache.ensure(parseImageReference(ref));
    assert.equal(readFileSync(join(image.rootfs, 'filler')).length, 32 << 20);
  });

  it('says how a pull goes: bytes fetched, then unpacking', async () => {
    const medium = pushImage(work, registry, 'tools/medium', '1', { fillerMegabytes: 6 });
    const cache = new ImageCache(join(work, 'cache-progress'), {}, { progressEveryMs: 10 });
    const seen: PullProgress[] = [];
    await cache.ensure(parseImageReference(`${registry.host}/tools/medium@${medium}`), (p) => seen.push(p));
    const unpacking = seen.filter((p) => p.phase === 'unpacking');
    assert.equal(unpacking.length, 1, JSON.stringify(seen));
    assert.ok(unpacking[0]!.bytes >= 6 << 20, `${unpacking[0]!.bytes} bytes fetched`);
    for (const p of seen.filter((x) => x.phase === 'pulling')) assert.ok(p.bytes <= unpacking[0]!.bytes);
    // What it fetches in all, from its manifest: the filler (random, so it does not compress) and more.
    const total = unpacking[0]!.total ?? 0;
    assert.ok(total >= 6 << 20 && total <= unpacking[0]!.bytes, `${total} of ${unpacking[0]!.bytes}`);
    assert.ok(seen.every((p) => p.total === total));
    assert.equal(seen.at(-1)!.phase, 'unpacking');
  });

  it('keeps to its bound: the least recently used go first, never one a job holds', async () => {
    const digests = ['a', 'b', 'c'].map((n) =>
      pushImage(work, registry, `tools/${n}`, '1', { files: { '/etc/name': `${n}\n` } }),
    );
    const [a, b, c] = digests.map((d, i) => parseImageReference(`${registry.host}/tools/${'abc'[i]}@${d}`));
    const probe = new ImageCache(join(work, 'cache-size'));
    const size = (await probe.ensure(a!)).bytes;
    // Room for two.
    const cache = new ImageCache(join(work, 'cache-bound'), {}, { cacheBytes: Math.floor(size * 2.5) });
    await cache.ensure(a!);
    await cache.ensure(b!);
    await cache.ensure(a!); // a used again: b is now the least recently used
    await cache.ensure(c!);
    assert.deepEqual(
      cache.list().map((i) => i.digest),
      [digests[0], digests[2]],
      'b went',
    );
    const held = await cache.use(a!);
    const listed = cache.list();
    assert.deepEqual(
      listed.map((i) => [i.digest, i.bytes, i.users]),
      [
        [digests[2], size, 0],
        [digests[0], size, 1],
      ],
      'the held one, used last, listed last',
    );
    assert.deepEqual(await cache.prune(0), [digests[2]], 'all but the held one');
    assert.equal(readFileSync(join(held.image.rootfs, 'etc', 'name'), 'utf8'), 'a\n');
    held.release();
    assert.deepEqual(await cache.prune(0), [digests[0]]);
    assert.deepEqual(readdirSync(cache.dir), [], 'nothing half removed is left');
  });

  it("shared by a node's agents: another process's hold keeps an image from this one's bound until that process is gone, and its pull under way is left alone", async () => {
    const d = pushImage(work, registry, 'tools/shared', '1', { files: { '/etc/name': 'shared\n' } });
    const ref = `${registry.host}/tools/shared@${d}`;
    const dir = join(work, 'cache-shared');
    // Another agent: holds the image for its job, and runs on.
    const other = cacheProcess(
      `const cache = new ImageCache(${JSON.stringify(dir)}, {}, { shared: true });
         await cache.use(parseImageReference(${JSON.stringify(ref)}));
         process.stdout.write('held\\n');
         setInterval(() => {}, 1000);`,
      ['ignore', 'pipe', 'inherit'],
    );
    const exited = new Promise((resolve) => other.once('exit', resolve));
    try {
      let out = '';
      other.stdout!.on('data', (b: Buffer) => (out += b.toString()));
      await waitFor('the other process to hold the image', () => out.includes('held'), 60_000);
      // A pull of the other process's, under way as this one opens the cache.
      const theirs = join(dir, `.partial-${other.pid}-pulling`);
      mkdirSync(theirs);
      const cache = new ImageCache(dir, {}, { shared: true });
      assert.ok(existsSync(theirs), "another live process's pull is not removed");
      assert.equal((await cache.ensure(parseImageReference(ref))).digest, d);
      assert.deepEqual(await cache.prune(0), [], 'held by the other process');
      assert.equal(readFileSync(join(cache.cached(d)!.rootfs, 'etc', 'name'), 'utf8'), 'shared\n');
    } finally {
      other.kill('SIGKILL');
      await exited;
    }
    // Killed -9: its hold holds nothing any more, and its partial directory goes at the next open.
    const cache = new ImageCache(dir, {}, { shared: true });
    assert.deepEqual(await cache.prune(0), [d]);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n !== '.holds'),
      [],
      'no image, no partial directory, no lock left',
    );
    assert.deepEqual(readdirSync(join(dir, '.holds')), [], "the dead process's hold removed");
  });
});
