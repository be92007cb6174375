/**
 * The registry, through skopeo (Debian's `skopeo`, the containers project's registry client):
 * what a tag stands for, and an image's bytes copied into an OCI layout on disk. berth speaks no
 * registry protocol of its own — authentication, mirrors, manifest lists and retries of a blob
 * are skopeo's.
 *
 * A failure says whose it is, from skopeo's message: an image or tag the registry does not have,
 * or credentials it refused, is the job's (it fails at once, with the registry's words); a
 * registry that cannot be reached is the infrastructure's (the job's infrastructure retries).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { formatImageReference, isLoopbackRegistry, type ImageReference } from './reference.js';

export const SKOPEO = '/usr/bin/skopeo';
export const SKOPEO_PACKAGE =
  'skopeo (Debian, Ubuntu: apt-get install skopeo; RHEL, Fedora: dnf install skopeo)';

/**
 * `file args…` run so that it is killed when the process that started it dies (util-linux's
 * `setpriv --pdeathsig`): a server killed mid-pull leaves no pull writing on behind it into the
 * directory its restart clears.
 */
export function dieWithParent(file: string, args: string[]): [string, string[]] {
  return ['/usr/bin/setpriv', ['--pdeathsig', 'KILL', '--', file, ...args]];
}

/**
 * The reference as skopeo takes it: by its digest when it has one, without its tag (skopeo refuses
 * "references with both a tag and digest"), else by its tag.
 */
function source(ref: ImageReference): string {
  return ref.digest
    ? `docker://${ref.registry}/${ref.repository}@${ref.digest}`
    : `docker://${formatImageReference(ref)}`;
}

/** Whose failure a registry's answer is. */
export type RegistryFailureKind = 'not-found' | 'refused' | 'unreachable' | 'other';

export class RegistryError extends Error {
  constructor(
    readonly kind: RegistryFailureKind,
    message: string,
  ) {
    super(message);
    this.name = 'RegistryError';
  }

  /** The job's own mistake (a wrong name or tag, credentials refused): retrying changes nothing. */
  get jobsFault(): boolean {
    return this.kind === 'not-found' || this.kind === 'refused';
  }
}

export interface RegistryOptions {
  /** A containers-auth.json file with the project's credentials (never on a command line). */
  authFile?: string;
  /** Registries to speak plain HTTP to besides the loopback's. */
  insecureRegistries?: readonly string[];
  timeoutMs?: number;
}

/** What skopeo said, without its logging frame: `time=… level=fatal msg="…"` → the message. */
export function skopeoMessage(stderr: string): string {
  const lines = stderr.trim().split('\n');
  const last = lines[lines.length - 1] ?? '';
  const m = /msg="((?:[^"\\]|\\.)*)"/.exec(last);
  const text = m ? m[1]!.replace(/\\(.)/g, '$1') : last;
  // "Error parsing image name "docker://…": reading manifest …" → "reading manifest …"
  return text.replace(/^Error (?:parsing image name|initializing source) "[^"]*":\s*/, '').trim();
}

/** Whose failure skopeo's message reports (the distribution spec's error codes, Go's net errors). */
export function classify(message: string): RegistryFailureKind {
  if (/manifest unknown|name unknown|not found|NAME_UNKNOWN|MANIFEST_UNKNOWN/i.test(message))
    return 'not-found';
  if (/unauthorized|authentication required|denied|forbidden|invalid username\/password/i.test(message))
    return 'refused';
  if (
    /connection refused|no such host|i\/o timeout|network is unreachable|connection reset|TLS handshake timeout|timed out|EOF$|server misbehaving|503|502|504/i.test(
      message,
    )
  )
    return 'unreachable';
  return 'other';
}

function tlsFlag(ref: ImageReference, o: RegistryOptions, flag: string): string[] {
  const plain = isLoopbackRegistry(ref.registry) || (o.insecureRegistries ?? []).includes(ref.registry);
  return plain ? [`${flag}=false`] : [];
}

function run(
  args: string[],
  o: RegistryOptions,
  encoding: 'buffer' | 'utf8' = 'utf8',
): Promise<Buffer | string> {
  if (!existsSync(SKOPEO))
    return Promise.reject(new RegistryError('other', `${SKOPEO} is missing: install ${SKOPEO_PACKAGE}`));
  return new Promise((resolve, reject) => {
    execFile(
      ...dieWithParent(SKOPEO, [
        ...args.slice(0, 1),
        ...(o.authFile ? ['--authfile', o.authFile] : []),
        ...args.slice(1),
      ]),
      // No proxy or credentials of the server's own environment: only what the project was given.
      {
        env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' },
        timeout: o.timeoutMs ?? 10 * 60_000,
        maxBuffer: 64 << 20,
        encoding,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        if (err.killed) return reject(new RegistryError('unreachable', `skopeo ${args[0]} timed out`));
        const message = skopeoMessage(String(stderr)) || err.message;
        reject(new RegistryError(classify(message), message));
      },
    );
  });
}

/**
 * The digest the reference stands for now: the sha256 of the manifest (or index) the registry
 * serves. A reference with a digest is asked too: whether this login may read it, and that the
 * registry serves those bytes — an image pulled with another project's login is not another's to run.
 */
export async function resolveDigest(ref: ImageReference, o: RegistryOptions = {}): Promise<string> {
  const raw = (await run(
    ['inspect', '--raw', ...tlsFlag(ref, o, '--tls-verify'), source(ref)],
    o,
    'buffer',
  )) as Buffer;
  const digest = `sha256:${createHash('sha256').update(raw).digest('hex')}`;
  if (ref.digest && digest !== ref.digest)
    throw new RegistryError('other', `the registry served ${digest} for ${formatImageReference(ref)}`);
  return digest;
}

/** Copies the image `ref` (pinned to a digest) into the OCI layout `layout` as tag `tag`. */
export async function copyToLayout(
  ref: ImageReference,
  layout: string,
  tag: string,
  o: RegistryOptions = {},
): Promise<void> {
  if (!ref.digest) throw new Error('copyToLayout: the reference must be pinned to a digest');
  await run(
    ['copy', '--quiet', ...tlsFlag(ref, o, '--src-tls-verify'), source(ref), `oci:${layout}:${tag}`],
    o,
  );
}

/**
 * The bytes a pull of `ref` (pinned) fetches, as its manifest lists them (config and layers,
 * compressed); undefined for an index of several platforms, whose pick is skopeo's.
 */
export async function manifestBytes(
  ref: ImageReference,
  o: RegistryOptions = {},
): Promise<number | undefined> {
  const raw = await run(['inspect', '--raw', ...tlsFlag(ref, o, '--tls-verify'), source(ref)], o);
  const m = JSON.parse(String(raw)) as { config?: { size?: unknown }; layers?: { size?: unknown }[] };
  if (!Array.isArray(m.layers)) return undefined;
  const sizes = [m.config?.size, ...m.layers.map((l) => l.size)];
  return sizes.every((n) => typeof n === 'number') ? sizes.reduce((a, b) => a + b, 0) : undefined;
}
