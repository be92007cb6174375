/**
 * The images of the `berth agent`s on one node (a Slurm node): one cache for all of them
 * (images/image-cache.ts, shared: each Slurm job runs an agent of its own, and a node runs several
 * jobs at once), so an image is pulled once per node and kept for the next job, and each job's
 * writable layer under a directory of root's alone beside it (as a local factory's, and for the
 * same reason: root mounts it, so a job must not own its parent).
 *
 *   DIR/sha256-<hex>/…               an image (image-cache.ts)
 *   DIR/.layers/<pid>-<worker>-<n>   a job's layer, made by agent <pid>; a dead agent's is removed
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { ImageCache } from '../images/image-cache.js';
import { pullReason } from '../images/pull-reason.js';
import { formatImageReference, imageParts, parseImageReference } from '../images/reference.js';
import { alive } from '../images/shared-holds.js';
import type { AgentImage } from './protocol.js';
import { removeBeneath } from './remove-beneath.js';
import { jobImage, type JobImage } from './sandbox.js';

export class NodeImages {
  private readonly cache: ImageCache;
  private readonly layers: string;
  /**
   * The registries the server said to speak plain HTTP to (its `images.insecureRegistries`), as
   * each job's image names one: the cache's own list, which it reads at each pull.
   */
  private readonly insecure: string[] = [];
  private readonly swept: Promise<void>;

  /** The node's cache in `dir` (made 0700), bounded to `cacheBytes` when given. */
  constructor(dir: string, cacheBytes?: number) {
    this.cache = new ImageCache(
      dir,
      { insecureRegistries: this.insecure },
      { shared: true, ...(cacheBytes !== undefined ? { cacheBytes } : {}) },
    );
    this.layers = join(dir, '.layers');
    mkdirSync(this.layers, { recursive: true, mode: 0o700 });
    // What agents that died left (no link of their jobs followed); another agent's are its own.
    const dead = readdirSync(this.layers).filter((name) => !alive(Number(name.split('-')[0])));
    this.swept = Promise.all(dead.map((name) => removeBeneath(join(this.layers, name)))).then(() => {});
  }

  /**
   * Job `label`'s image, pulled if the node lacks it (`waiting` hears its progress, then null),
   * with a new layer; `release` lets go of the image and removes the layer. Rejects with the
   * registry's error (a RegistryError) when it cannot be had.
   */
  async prepare(
    image: AgentImage,
    label: string,
    workdir: string,
    waiting: (reason: string | null) => void,
  ): Promise<{ image: JobImage; release: () => Promise<void> }> {
    await this.swept;
    const ref = parseImageReference(image.reference);
    if (image.insecure && !this.insecure.includes(ref.registry)) this.insecure.push(ref.registry);
    const name = imageParts(formatImageReference(ref)).image;
    const held = await this.cache.use(ref, (p) => waiting(pullReason(name, p)), image.login);
    waiting(null);
    const layer = join(this.layers, `${process.pid}-${label}-${randomBytes(4).toString('hex')}`);
    try {
      await mkdir(layer, { mode: 0o700 });
    } catch (e) {
      held.release();
      throw e;
    }
    return {
      image: jobImage(held.image.rootfs, held.image.config, layer, workdir),
      release: async () => {
        held.release();
        await removeBeneath(layer);
      },
    };
  }
}
