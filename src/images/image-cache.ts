/**
 * Images on this machine, by digest: each pulled once (skopeo, into an OCI layout), unpacked once
 * (umoci, Debian's `umoci`: the layers applied in order, whiteouts and owners included), and then
 * shared read-only by every job of that digest (each job writes to a layer of its own on top).
 *
 *   DIR/sha256-<hex>/rootfs       the image's filesystem
 *   DIR/sha256-<hex>/image.json   its config (image-config.ts) and size
 *   DIR/.partial-…                a pull under way; what a killed one left is removed at open
 *
 * An image appears under its digest's name only whole: it is pulled and unpacked beside, then
 * renamed into place, one step the kernel does at once. A kill -9 mid-pull leaves a `.partial-`
 * directory, never a half image that a job would run. Jobs that want one digest at the same time
 * share one pull.
 *
 * Bounded (`cacheBytes`): once a pull has put an image in, the least recently used images go until
 * the rest fit — never one a job holds (`use` … `release`), whatever the bound. An image leaves by
 * a rename out of its digest's name first, so it is whole or absent, never half removed. When each
 * was last used is its image.json's modification time: it outlives a restart.
 *
 * Shared (`shared: true`, the node-local cache of a Slurm node's agents): several processes use
 * the directory at once. Each one's holds keep the others' bounds off an image (shared-holds.ts),
 * and a process removes only the `.partial-` directories of processes that are gone.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { parseImageConfig, type ImageConfig } from './image-config.js';
import { formatImageReference, type ImageReference } from './reference.js';
import { withAuthFile, type RegistryLogin } from './auth-file.js';
import { copyToLayout, dieWithParent, manifestBytes, RegistryError, type RegistryOptions } from './skopeo.js';
import { alive, SharedHolds } from './shared-holds.js';

export const UMOCI = '/usr/bin/umoci';
export const UMOCI_PACKAGE = 'umoci (Debian, Ubuntu: apt-get install umoci)';

/** What a pull has done so far: bytes fetched of the image's (when the registry said its size), then unpacking. */
export interface PullProgress {
  phase: 'pulling' | 'unpacking';
  bytes: number;
  /** What the pull fetches in all, as the image's manifest says (absent for a multi-platform index). */
  total?: number;
}

/** An image on this machine, as `berth images` lists it. */
export interface ImageEntry {
  digest: string;
  /** The reference it was first pulled by, without its digest; null when not known. */
  reference: string | null;
  bytes: number;
  lastUsed: Date;
  /** How many jobs hold it now. */
  users: number;
}

/** What the cache tells as it works (the server's metrics: berth_image_*). */
export interface ImageCacheEvents {
  /** A pull ended: `bytes` fetched when it got the image, null when it failed. */
  pulled(bytes: number | null): void;
  /** An image was asked for and served without a pull of its own (on disk, or another's pull). */
  hit(): void;
  /** The bound removed an image. */
  evicted(): void;
}

export interface ImageCacheOptions {
  /** The most the unpacked images may take, in bytes (absent: no bound). */
  cacheBytes?: number;
  events?: ImageCacheEvents;
  /** How often a pull's progress is looked at (ms). */
  progressEveryMs?: number;
  /** Other processes use the directory too (see above). */
  shared?: boolean;
}

export interface CachedImage {
  digest: string;
  /** The unpacked filesystem: read-only to jobs. */
  rootfs: string;
  config: ImageConfig;
  /** Bytes on disk of the unpacked filesystem. */
  bytes: number;
  /** What it was first pulled by (`registry/name:tag`), when known. */
  reference?: string;
}

interface Stored {
  digest: string;
  config: ImageConfig;
  bytes: number;
  /** What it was pulled by (`registry/name:tag`): for people, never for finding it. */
  reference?: string;
}

const PARTIAL = '.partial-';
const TAG = 'image';

const dirName = (digest: string): string => digest.replace(':', '-');

export class ImageCache {
  private readonly pulls = new Map<string, Promise<CachedImage>>();
  /** Jobs holding each image, by digest. */
  private readonly holders = new Map<string, number>();
  /** Progress listeners of the pulls under way, by digest. */
  private readonly listeners = new Map<string, Set<(p: PullProgress) => void>>();

  /** Holds across processes, when shared. */
  private readonly shared: SharedHolds | undefined;

  /** Opens the cache in `dir` (made 0700 if missing), removing what interrupted pulls left. */
  constructor(
    readonly dir: string,
    private readonly registry: RegistryOptions = {},
    private readonly o: ImageCacheOptions = {},
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (o.shared) this.shared = new SharedHolds(dir);
    for (const name of readdirSync(dir)) {
      if (!name.startsWith(PARTIAL)) continue;
      // Shared: another process's pull under way is left alone (its name says whose it is).
      const pid = Number(/^\.partial-(\d+)-/.exec(name)?.[1]);
      if (o.shared && pid && alive(pid)) continue;
      rmSync(join(dir, name), { recursive: true, force: true });
    }
  }

  /** The image if this machine has it, else undefined. */
  cached(digest: string): CachedImage | undefined {
    const path = join(this.dir, dirName(digest));
    try {
      const stored = JSON.parse(readFileSync(join(path, 'image.json'), 'utf8')) as Stored;
      return { ...stored, rootfs: join(path, 'rootfs') };
    } catch {
      return undefined;
    }
  }

  /**
   * The image `ref` (pinned to a digest), pulled and unpacked if this machine lacks it; one pull
   * however many ask at once. Rejects with a RegistryError saying whose failure it is.
   */
  ensure(
    ref: ImageReference,
    onProgress?: (p: PullProgress) => void,
    login?: RegistryLogin,
  ): Promise<CachedImage> {
    const digest = ref.digest;
    if (!digest)
      return Promise.reject(new Error(`image ${formatImageReference(ref)} is not pinned to a digest`));
    const have = this.cached(digest);
    if (have) {
      this.touch(digest);
      this.o.events?.hit();
      return Promise.resolve(have);
    }
    if (onProgress) {
      let set = this.listeners.get(digest);
      if (!set) this.listeners.set(digest, (set = new Set()));
      set.add(onProgress);
    }
    let pull = this.pulls.get(digest);
    if (pull) this.o.events?.hit();
    else {
      pull = this.pull(ref, digest, login).finally(() => {
        this.pulls.delete(digest);
        this.listeners.delete(digest);
      });
      this.pulls.set(digest, pull);
    }
    return pull;
  }

  /**
   * The image, held for a job until `release`: the bound never removes it meanwhile. Held before
   * the pull ends, so that the eviction after it cannot take it.
   */
  async use(
    ref: ImageReference,
    onProgress?: (p: PullProgress) => void,
    login?: RegistryLogin,
  ): Promise<{ image: CachedImage; release: () => void }> {
    const digest = ref.digest ?? '';
    this.holders.set(digest, (this.holders.get(digest) ?? 0) + 1);
    const shared = this.shared;
    const unhold = shared ? await shared.locked(() => shared.hold(dirName(digest))) : undefined;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      unhold?.();
      const n = (this.holders.get(digest) ?? 1) - 1;
      if (n > 0) this.holders.set(digest, n);
      else this.holders.delete(digest);
    };
    try {
      return { image: await this.ensure(ref, onProgress, login), release };
    } catch (e) {
      release();
      throw e;
    }
  }

  /** The images on this machine, least recently used first. */
  list(): ImageEntry[] {
    const out: ImageEntry[] = [];
    for (const name of readdirSync(this.dir)) {
      if (name.startsWith(PARTIAL)) continue;
      const digest = name.replace('-', ':');
      const image = this.cached(digest);
      if (!image) continue;
      let lastUsed: Date;
      try {
        lastUsed = statSync(join(this.dir, name, 'image.json')).mtime;
      } catch {
        continue; // removed meanwhile
      }
      out.push({
        digest,
        reference: image.reference ?? null,
        bytes: image.bytes,
        lastUsed,
        users: this.holders.get(digest) ?? 0,
      });
    }
    return out.sort(
      (a, b) => a.lastUsed.getTime() - b.lastUsed.getTime() || a.digest.localeCompare(b.digest),
    );
  }

  /**
   * Removes the least recently used images no job holds until the rest fit in `cacheBytes` (all
   * of them with 0); returns the digests removed. Shared, no process's job holds them either.
   */
  async prune(cacheBytes = this.o.cacheBytes ?? Infinity): Promise<string[]> {
    const shared = this.shared;
    const gone = shared
      ? await shared.locked(() => this.evict(cacheBytes, (digest) => shared.held(dirName(digest))))
      : this.evict(cacheBytes, () => false);
    for (const { path } of gone) rmSync(path, { recursive: true, force: true });
    return gone.map((g) => g.digest);
  }

  /**
   * Takes the least recently used images no one holds out of their names (one rename each: whole
   * or absent) until the rest fit; returns where they went, to be deleted.
   */
  private evict(
    cacheBytes: number,
    heldElsewhere: (digest: string) => boolean,
  ): { digest: string; path: string }[] {
    const images = this.list();
    let total = images.reduce((sum, i) => sum + i.bytes, 0);
    const gone: { digest: string; path: string }[] = [];
    for (const image of images) {
      if (total <= cacheBytes) break;
      if (image.users > 0 || this.pulls.has(image.digest) || heldElsewhere(image.digest)) continue;
      const path = join(
        this.dir,
        `${this.partialPrefix()}removed-${dirName(image.digest)}-${randomBytes(4).toString('hex')}`,
      );
      try {
        renameSync(join(this.dir, dirName(image.digest)), path);
      } catch {
        continue; // removed meanwhile
      }
      this.o.events?.evicted();
      total -= image.bytes;
      gone.push({ digest: image.digest, path });
    }
    return gone;
  }

  /** The name a directory of this process's work begins with: shared, it says whose it is. */
  private partialPrefix(): string {
    return this.shared ? `${PARTIAL}${process.pid}-` : PARTIAL;
  }

  /** Marks the image used now (its image.json's modification time). */
  private touch(digest: string): void {
    const now = new Date();
    try {
      utimesSync(join(this.dir, dirName(digest), 'image.json'), now, now);
    } catch {
      // removed meanwhile: the caller has its paths, and a job holding it keeps it
    }
  }

  private progress(digest: string, p: PullProgress): void {
    for (const listener of this.listeners.get(digest) ?? []) listener(p);
  }

  private async pull(ref: ImageReference, digest: string, login?: RegistryLogin): Promise<CachedImage> {
    // The login, if any, in an auth file for this pull alone (auth-file.ts).
    return withAuthFile(login, (authFile) =>
      this.pullWith(ref, digest, authFile ? { ...this.registry, authFile } : this.registry),
    );
  }

  private async pullWith(
    ref: ImageReference,
    digest: string,
    registry: RegistryOptions,
  ): Promise<CachedImage> {
    const staging = join(
      this.dir,
      `${this.partialPrefix()}${dirName(digest)}-${randomBytes(4).toString('hex')}`,
    );
    mkdirSync(staging, { mode: 0o700 });
    try {
      const layout = join(staging, 'layout');
      // Its size, for the progress to say "N of M MB", asked beside the copy rather than before
      // it (a skopeo start and a round trip less); no progress is said until it is known. A
      // failure here is the copy's too, which says it.
      let of: { total?: number } | undefined;
      const sized = manifestBytes(ref, registry).then(
        (total) => (of = total === undefined ? {} : { total }),
        () => (of = {}),
      );
      // What has arrived so far: the blobs skopeo has written (it writes each as it fetches it).
      const watch = setInterval(() => {
        // Walked only for someone who listens.
        if (of && this.listeners.get(digest)?.size)
          this.progress(digest, {
            phase: 'pulling',
            bytes: existsSync(layout) ? diskBytes(layout) : 0,
            ...of,
          });
      }, this.o.progressEveryMs ?? 1000);
      try {
        await copyToLayout(ref, layout, TAG, registry);
        await sized;
      } finally {
        clearInterval(watch);
      }
      const fetched = diskBytes(layout);
      this.progress(digest, { phase: 'unpacking', bytes: fetched, ...of });
      // The filesystem alone (`raw unpack`): `umoci unpack` also writes a runtime bundle's config
      // and an mtree manifest of every file, hashing the whole image once more (a third of its
      // time for a 200 MB image here), and berth uses neither.
      const rootfs = join(staging, 'rootfs');
      await umoci(['raw', 'unpack', '--image', `${layout}:${TAG}`, rootfs]);
      const final = join(this.dir, dirName(digest));
      const stored: Stored = {
        digest,
        config: readLayoutConfig(layout, TAG),
        bytes: diskBytes(rootfs),
        reference: formatImageReference({ ...ref, digest: undefined }),
      };
      const image = join(staging, 'image');
      mkdirSync(image, { mode: 0o711 });
      renameSync(rootfs, join(image, 'rootfs'));
      writeFileSync(join(image, 'image.json'), JSON.stringify(stored));
      try {
        renameSync(image, final);
      } catch (e) {
        // Another process (a second agent on this machine) put it there first: the same bytes.
        if (!this.cached(digest)) throw e;
      }
      this.touch(digest);
      this.o.events?.pulled(fetched);
      // Room for it: the least recently used others go (never one held, nor this one, being pulled).
      await this.prune();
      return this.cached(digest)!;
    } catch (e) {
      this.o.events?.pulled(null);
      throw e;
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
}

function umoci(args: string[]): Promise<void> {
  if (!existsSync(UMOCI))
    return Promise.reject(new RegistryError('other', `${UMOCI} is missing: install ${UMOCI_PACKAGE}`));
  return new Promise((resolve, reject) =>
    execFile(
      ...dieWithParent(UMOCI, args),
      { env: { PATH: '/usr/bin:/bin' }, maxBuffer: 16 << 20 },
      (err, _out, stderr) => {
        if (!err) return resolve();
        reject(
          new RegistryError(
            'other',
            `unpacking the image: ${String(stderr).trim().split('\n').pop() ?? err.message}`,
          ),
        );
      },
    ),
  );
}

/** The config of image `tag` in an OCI layout: index.json → its manifest → the config blob. */
function readLayoutConfig(layout: string, tag: string): ImageConfig {
  const blob = (digest: string): unknown =>
    JSON.parse(readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8'));
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as {
    manifests: { digest: string; annotations?: Record<string, string> }[];
  };
  const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === tag);
  if (!entry) throw new RegistryError('other', `the pulled layout has no image ${tag}`);
  const manifest = blob(entry.digest) as { config: { digest: string } };
  return parseImageConfig(blob(manifest.config.digest));
}

/** The bytes of the regular files under `dir` (links not followed). */
function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      total += statSync(join(entry.parentPath, entry.name)).size;
    } catch {
      // gone meanwhile: not counted
    }
  }
  return total;
}
