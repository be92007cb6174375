/** `GET /images`: an OCI image on the server's machine (docs/IMAGES.md). Pure: no I/O. */

/** Where a Slurm node's agents keep their images unless told (`berth agent --image-cache`). */
export const DEFAULT_NODE_IMAGE_CACHE = '/var/cache/berth/images';

export interface CachedImageView {
  /** `sha256:…`: what the image is. */
  digest: string;
  /** The reference it was first pulled by (`registry/name:tag`); null when not known. */
  reference: string | null;
  /** Bytes of its unpacked files on disk. */
  bytes: number;
  /** When a job last used it (or it was pulled). */
  lastUsedAt: string;
  /** The jobs whose workers hold it now: the cache never removes it while any does. */
  jobs: number[];
}
