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
import { mkdirSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { ImageCache, type ImageCacheEvents } from '../images/image-cache.js';
import type { FactoryIsolation } from './isolation.js';
import { removeBeneath } from '../agent/remove-beneath.js';
import type { JobImage } from '../agent/sandbox.js';
import type { CachedImageView } from '../domain/image.js';
import type { ImageEntry, PullProgress } from '../images/image-cache.js';
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
      // The image's working directory, or the job's own when the image names none.
      const cwd = cached.config.workingDir === '/' ? workdir : cached.config.workingDir;
      out.push({ root: { rootfs: cached.rootfs, layer, cwd }, config: cached.config });
    }
    return out;
  }

  /** The images on this machine, least recently used first, with the jobs that hold each. */
  list(): CachedImageView[] {
    return this.cache.list().map((e) => this.view(e));
  }

  /** Removes every image no job holds (`berth images prune`); returns what it removed. */
  prune(): CachedImageView[] {
    const before = new Map(this.cache.list().map((e) => [e.digest, e]));
    return this.cache.prune(0).map((digest) => this.view(before.get(digest)!));
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

/** "pulling image 127.0.0.1:5000/team/app:1: 120 of 800 MB", then "unpacking image … (800 MB)". */
export function pullReason(name: string, p: PullProgress): string {
  const mb = (n: number) => (n / 1e6).toFixed(n < 10e6 ? 1 : 0);
  // The layout holds a little more than the blobs (its index): never more than all, said.
  const bytes = p.total === undefined ? p.bytes : Math.min(p.bytes, p.total);
  if (p.phase === 'unpacking') return `unpacking image ${name} (${mb(p.total ?? bytes)} MB)`;
  return p.total === undefined
    ? `pulling image ${name}: ${mb(bytes)} MB so far`
    : `pulling image ${name}: ${mb(bytes)} of ${mb(p.total)} MB`;
}

/**
 * This machine's images (config `images`: DATA/images by default) and its workers' layers
 * (DATA/image-layers), shared by its local factories; none when no local factory gives its jobs
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
  return new WorkerImages(cache, join(dataDir, 'image-layers'));
}
