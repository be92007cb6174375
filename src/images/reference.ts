/**
 * An image reference as Docker and the OCI distribution spec write it (`registry/name:tag`,
 * `registry/name@sha256:…`), parsed and normalized the way `docker pull` does: a name without a
 * registry is Docker Hub's (`busybox` → `docker.io/library/busybox:latest`), a reference without
 * tag or digest means `latest`. The grammar is distribution/reference's: lowercase path
 * components joined by `.`, `_`, `__` or dashes; a first component with a dot or a port, or
 * `localhost`, is the registry.
 *
 * Pure: no I/O. The digest a tag stands for is the registry's answer (skopeo.ts).
 */

export interface ImageReference {
  /** `127.0.0.1:5000`, `docker.io`, `registry.example.org`. */
  registry: string;
  /** `library/busybox`, `team/pytorch`. */
  repository: string;
  /** Absent when only a digest was given. */
  tag?: string;
  /** `sha256:` and 64 hex digits. */
  digest?: string;
}

/** Why a reference is not one. */
export class ImageReferenceError extends Error {
  constructor(
    readonly reference: string,
    why: string,
  ) {
    super(`image ${JSON.stringify(reference)}: ${why}`);
    this.name = 'ImageReferenceError';
  }
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const REGISTRY =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]{1,5})?$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** The whole reference's length limit, as Docker's (the name part: 255). */
const NAME_MAX = 255;

export const DEFAULT_REGISTRY = 'docker.io';

export function parseImageReference(text: string): ImageReference {
  const fail = (why: string): never => {
    throw new ImageReferenceError(text, why);
  };
  if (text.length === 0) fail('empty');
  if (/\s/.test(text)) fail('has white space');
  let rest = text;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest))
      fail(`digest ${JSON.stringify(digest)} is not sha256: and 64 lowercase hex digits`);
  }
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag))
      fail(
        `tag ${JSON.stringify(tag)} is not letters, digits, _, . and - (at most 128, not starting with . or -)`,
      );
  }
  const parts = rest.split('/');
  const first = parts[0]!;
  const hasRegistry =
    parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost');
  const registry = hasRegistry ? first : DEFAULT_REGISTRY;
  if (hasRegistry && !REGISTRY.test(registry))
    fail(`registry ${JSON.stringify(registry)} is not a host name with an optional port`);
  const path = hasRegistry ? parts.slice(1) : parts;
  for (const component of path)
    if (!COMPONENT.test(component))
      fail(
        component === ''
          ? 'has an empty path component'
          : `${JSON.stringify(component)} is not a repository name component (lowercase letters, digits, and . _ __ - between them)`,
      );
  const repository =
    registry === DEFAULT_REGISTRY && path.length === 1 ? `library/${path[0]}` : path.join('/');
  if (rest.length > NAME_MAX) fail(`the name is longer than ${NAME_MAX} characters`);
  return {
    registry,
    repository,
    ...(tag !== undefined || digest === undefined ? { tag: tag ?? 'latest' } : {}),
    ...(digest ? { digest } : {}),
  };
}

/** The reference written out in full: `registry/repository[:tag][@digest]`. */
export function formatImageReference(r: ImageReference): string {
  return `${r.registry}/${r.repository}${r.tag !== undefined ? `:${r.tag}` : ''}${r.digest ? `@${r.digest}` : ''}`;
}

/** The reference pinned to `digest`: the bytes a job, its retries and its reruns get. */
export function pinned(r: ImageReference, digest: string): ImageReference {
  return { ...r, digest };
}

/**
 * A job's image as its spec keeps it (`registry/name:tag@sha256:…` once pinned), apart: the name
 * it was asked by and the digest it stands for (null until pinned).
 */
export function imageParts(full: string): { image: string; digest: string | null } {
  const at = full.indexOf('@');
  return at < 0 ? { image: full, digest: null } : { image: full.slice(0, at), digest: full.slice(at + 1) };
}

/**
 * Whether the registry is on this machine's loopback (127.0.0.0/8, ::1, localhost): the one place
 * plain HTTP is spoken without being configured, as Docker allows.
 */
export function isLoopbackRegistry(registry: string): boolean {
  const host = registry.startsWith('[')
    ? registry.slice(1, registry.indexOf(']'))
    : registry.replace(/:\d+$/, '');
  return host === 'localhost' || host === '::1' || /^127(?:\.\d{1,3}){3}$/.test(host);
}

/**
 * Why a target whose `registries` are `allowed` refuses the image, or undefined when it takes it
 * (any registry, when it names none).
 */
export function registryRefusal(
  ref: ImageReference,
  allowed: readonly string[] | undefined,
  target: string,
): string | undefined {
  if (allowed === undefined || allowed.includes(ref.registry.toLowerCase())) return undefined;
  return `registry ${ref.registry} is not one target "${target}" allows (its registries: ${allowed.join(', ') || 'none'})`;
}

/**
 * `text` as a registry's name (`host[:port]`, as references name it; lowercased), or undefined
 * when it is not one. `docker.io` is Docker Hub's, as a name without a registry means.
 */
export function registryName(text: string): string | undefined {
  return REGISTRY.test(text) && text.length <= 255 ? text.toLowerCase() : undefined;
}
