/** `GET /images`: an OCI image on the server's machine (docs/IMAGES.md). Pure: no I/O. */
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
