/**
 * The images of a local factory's workers: a worker's image held in this machine's cache
 * (images/image-cache.ts) for as long as the worker lives — pulled first if the machine lacks it,
 * its progress said as the worker's wait — and a writable layer for each member (an overlay's
 * upper and work directories, agent/sandbox.ts), removed with the worker.
 *
 * The layers are under a directory of root's alone (0700), never in a worker's own directory:
 * root mounts a layer before the job runs, and a job that owned its layer's parent could put a
 * link in its place and have root mount over a path of its choosing.
 */
import { existsSync, mkdirSync, readdirSync, statfsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Config } from '../config/schema.js';
import { ImageCache, type ImageCacheEvents } from '../images/image-cache.js';
import type { FactoryIsolation } from './isolation.js';
import { removeBeneath } from '../agent/remove-beneath.js';
import { jobImage, type JobImage } from '../agent/sandbox.js';
import type { CachedImageView } from '../domain/image.js';
import type { ImageEntry } from '../images/image-cache.js';
import { pullReason } from '../images/pull-reason.js';
import type { RegistryLogin } from '../images/auth-file.js';
import { formatImageReference, imageParts, parseImageReference } from '../images/reference.js';

/** What a worker holds: its image, and its members' layers. */
interface Held {
  jobId: number;
  digest: string;
  release: () => void;
  layers: string[];
}

export class WorkerImages {
  private readonly held = new Map<number, Held>();

  /**
   * Images from `cache`; layers in `layersDir` (made 0700; what a server that died left there is
   * removed, before any worker can have a layer in it).
   */
  constructor(
    private readonly cache: ImageCache,
    private readonly layersDir: string,
  ) {
    mkdirSync(layersDir, { recursive: true, mode: 0o700 });
    this.swept = Promise.all(readdirSync(layersDir).map((name) => removeBeneath(join(layersDir, name)))).then(
      () => {},
    );
  }

  private readonly swept: Promise<void>;

  /**
   * The image `image` (pinned) for each of a worker's `workdirs` (one per member): held until
   * `release`, with a new layer each. `waiting` hears what a pull has done so far, and null once
   * the image is here; `login`, the job's project's to the registry, is what a pull uses. Rejects with the registry's error (a RegistryError) when it cannot be had.
   */
  async prepare(
    workerId: number,
    jobId: number,
    image: string,
    workdirs: string[],
    waiting: (reason: string | null) => void,
    login?: RegistryLogin,
  ): Promise<JobImage[]> {
    await this.swept;
    const ref = parseImageReference(image);
    const name = imageParts(formatImageReference(ref)).image;
    const { image: cached, release } = await this.cache.use(ref, (p) => waiting(pullReason(name, p)), login);
    waiting(null);
    const held: Held = { jobId, digest: cached.digest, release, layers: [] };
    this.held.set(workerId, held);
    const out: JobImage[] = [];
    for (const [rank, workdir] of workdirs.entries()) {
      const layer = join(this.layersDir, `${workerId}-${rank}`);
      held.layers.push(layer);
      await mkdir(layer, { mode: 0o700 });
      out.push(jobImage(cached.rootfs, cached.config, layer, workdir));
    }
    return out;
  }

  /** The images on this machine, least recently used first, with the jobs that hold each. */
  list(): CachedImageView[] {
    return this.cache.list().map((e) => this.view(e));
  }

  /** Removes every image no job holds (`berth images prune`); returns what it removed. */
  async prune(): Promise<CachedImageView[]> {
    const before = new Map(this.cache.list().map((e) => [e.digest, e]));
    return (await this.cache.prune(0)).map((digest) => this.view(before.get(digest)!));
  }

  private view(e: ImageEntry): CachedImageView {
    const jobs = [...this.held.values()].filter((h) => h.digest === e.digest).map((h) => h.jobId);
    return {
      digest: e.digest,
      reference: e.reference,
      bytes: e.bytes,
      lastUsedAt: e.lastUsed.toISOString(),
      jobs: jobs.sort((a, b) => a - b),
    };
  }

  /** Lets go of the worker's image and removes its layers (their files are the job's: no link followed). */
  async release(workerId: number): Promise<string[]> {
    const held = this.held.get(workerId);
    if (!held) return [];
    this.held.delete(workerId);
    held.release();
    const left: string[] = [];
    for (const layer of held.layers) left.push(...(await removeBeneath(layer)).left);
    return left;
  }
}

/** Where this machine's workers' layers are made: `images.layersDir`, else DATA/image-layers. */
export const imageLayersDir = (config: Config, dataDir: string): string =>
  config.images.layersDir ?? join(dataDir, 'image-layers');

/**
 * Filesystems overlayfs will not write its upper layer to (statfs's f_type, linux/magic.h): a job's
 * layer there mounts read-only, and the job fails as it starts.
 */
const NOT_UPPER: Record<number, string> = {
  0x6969: 'NFS',
  0xff534d42: 'CIFS',
  0xfe534d42: 'SMB2',
  0x65735546: 'FUSE',
  0x794c7630: 'overlayfs',
  0x01021997: '9p',
  0x00c0ffee: 'hostfs',
};

/**
 * Why jobs' layers cannot be made in `dir` (the filesystem it is, or would be made, on), or
 * undefined: said at start, and as the reason a local target refuses images.
 */
export function layersRefusal(dir: string): string | undefined {
  let on = dir;
  while (!existsSync(on) && dirname(on) !== on) on = dirname(on);
  let type: number;
  try {
    type = Number(statfsSync(on).type);
  } catch {
    return undefined; // said when a layer is made, with the system's words
  }
  const fs = NOT_UPPER[type];
  return fs
    ? `its jobs' layers would be on ${fs} (${dir}), which overlayfs cannot write to: set images.layersDir to a local filesystem (ext4, xfs, btrfs, tmpfs)`
    : undefined;
}

/**
 * This machine's images (config `images`: DATA/images by default) and its workers' layers
 * (`imageLayersDir`), shared by its local factories; none when no local factory gives its jobs
 * namespaces of their own, which images need.
 */
export function machineImages(
  config: Config,
  dataDir: string,
  isolation: Map<string, FactoryIsolation>,
  events: ImageCacheEvents | undefined,
): WorkerImages | undefined {
  const runs = Object.entries(config.factories).some(
    ([name, f]) => f.kind === 'local' && isolation.get(name)?.sandbox !== undefined,
  );
  if (!runs) return undefined;
  const cache = new ImageCache(
    config.images.dir ?? join(dataDir, 'images'),
    { insecureRegistries: config.images.insecureRegistries },
    { cacheBytes: config.images.cacheBytes, ...(events ? { events } : {}) },
  );
  return new WorkerImages(cache, imageLayersDir(config, dataDir));
}
