/**
 * A submission made into a job's spec, before anything is read: the fields checked and normalised
 * (`buildSpec`), its target's defaults applied and said (`withTargetDefaults`), the name it gets
 * when it gives none, and what the audit keeps of it. Pure: the submission's checks against the
 * store and the runtime are runnable.ts's; its write is submit-job.ts's.
 */
import { JOBS_RESOURCE } from '../../domain/cluster-queue.js';
import { BadRequestError } from '../../domain/errors.js';
import { MAX_GANG_WORKERS, type JobSpec } from '../../domain/job.js';
import { checkArtifactPatterns } from '../../domain/artifact.js';
import { formatSpan } from '../../domain/duration.js';
import { retrySpec } from '../../domain/retry.js';
import { arraySpecOf } from '../../domain/job-array.js';
import { checkName, CONTROL_CHARACTER, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../../domain/names.js';
import { parseAmount, type QuantityInput } from '../../domain/quantity.js';
import {
  formatImageReference,
  imageParts,
  ImageReferenceError,
  parseImageReference,
} from '../../images/reference.js';

export interface SubmitInput {
  name?: string;
  command?: string[];
  script?: string;
  target?: string;
  requests?: Record<string, QuantityInput>;
  resources?: string[];
  /** A number, or the name of a priority class. */
  priority?: number | string;
  env?: Record<string, string>;
  timeoutSeconds?: number;
  dependsOn?: (number | string)[];
  dependsOnAny?: (number | string)[];
  dependsOnFailed?: (number | string)[];
  idempotencyKey?: string;
  /** A gang job's number of workers (1 by default). */
  workers?: number;
  /** Retry budgets and backoff (domain/retry.ts). */
  retries?: number;
  infraRetries?: number;
  retryBackoffSeconds?: number;
  /** Slurm's --array: one task per index (domain/job-array.ts). */
  array?: string;
  /** Glob patterns of the files kept as artifacts (domain/artifact.ts). */
  artifacts?: string[];
  /** An OCI image to run in (`registry/name:tag` or `…@sha256:…`, images/reference.ts). */
  image?: string;
  /** Run on a terminal its submitter attaches to (`berth run -it`). */
  interactive?: boolean;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The spec of a submission, its fields checked (400 naming the field otherwise). */
export function buildSpec(input: SubmitInput): JobSpec {
  if (input.command && input.script !== undefined)
    throw new BadRequestError('give either command or script, not both');
  const command = input.command ?? (input.script !== undefined ? ['/bin/sh', '-c', input.script] : undefined);
  const image = input.image === undefined ? undefined : imageOf(input.image);
  // In an image, no command runs the image's own (its Entrypoint and Cmd), as `docker run` does.
  if (image === undefined && (!command || command.length === 0))
    throw new BadRequestError('a job needs a command (argv list) or a script');
  if (command && command.length > 0 && !command[0])
    throw new BadRequestError('command: its first element (the program) is empty');
  const requests: Record<string, string> = {};
  for (const [resource, value] of Object.entries(input.requests ?? {})) {
    checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, 'requests: resource', resource);
    if (resource === JOBS_RESOURCE)
      throw new BadRequestError('requests.jobs: every job implicitly requests jobs: 1; leave it out');
    parseAmount(resource, value, `requests.${resource}`);
    requests[resource] = typeof value === 'number' ? String(value) : value.trim();
  }
  for (const k of Object.keys(input.env ?? {})) {
    if (!ENV_NAME.test(k))
      throw new BadRequestError(`env: ${JSON.stringify(k)} is not a valid variable name`);
    if (k.startsWith('BERTH_'))
      throw new BadRequestError(`env: ${k}: variables starting with BERTH_ are set by berth`);
  }
  const ids = (field: string, list: (number | string)[] | undefined): number[] => [
    ...new Set(
      (list ?? []).map((d) => {
        const n = typeof d === 'number' ? d : Number(d);
        if (!Number.isSafeInteger(n) || n <= 0)
          throw new BadRequestError(`${field}: ${JSON.stringify(d)} is not a job id`);
        return n;
      }),
    ),
  ];
  const dependsOn = ids('dependsOn', input.dependsOn);
  const dependsOnAny = ids('dependsOnAny', input.dependsOnAny);
  const dependsOnFailed = ids('dependsOnFailed', input.dependsOnFailed);
  const workers = input.workers ?? 1;
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > MAX_GANG_WORKERS)
    throw new BadRequestError(`workers: ${workers} is not a whole number from 1 to ${MAX_GANG_WORKERS}`);
  const artifacts = checkArtifactPatterns(input.artifacts ?? []);
  return {
    command: command ?? [],
    ...(image !== undefined ? { image } : {}),
    env: input.env ?? {},
    timeoutSeconds: input.timeoutSeconds ?? null,
    requests,
    resources: [...new Set(input.resources ?? [])].sort(),
    dependsOn,
    // Kept only when given, so that a spec without them stays as it always was.
    ...(dependsOnAny.length > 0 ? { dependsOnAny } : {}),
    ...(dependsOnFailed.length > 0 ? { dependsOnFailed } : {}),
    // Kept only for a gang, so a one-worker job's spec stays as it always was.
    ...(workers > 1 ? { workers } : {}),
    ...retrySpec(input),
    ...arraySpecOf(input.array),
    ...(artifacts.length > 0 ? { artifacts } : {}),
    ...(input.interactive ? { interactive: true } : {}),
  };
}

/** `text` as an image reference written out in full (images/reference.ts); 400 saying why if it is not one. */
function imageOf(text: string): string {
  try {
    return formatImageReference(parseImageReference(text));
  } catch (e) {
    // "image "Busybox": "Busybox" is not a repository name component (lowercase letters, …)"
    if (e instanceof ImageReferenceError) throw new BadRequestError(e.message);
    throw e;
  }
}

/**
 * A job that gives no timeout gets its target's `defaultTimeout`, kept in its spec: it is then
 * stopped after it, shown with it, and may run on a pilot worker (which needs to know it ends).
 */
function withDefaultTimeout(spec: JobSpec, seconds: number | undefined): JobSpec {
  return spec.timeoutSeconds === null && seconds !== undefined ? { ...spec, timeoutSeconds: seconds } : spec;
}

/**
 * A job that names no request of a resource gets its target's `defaultRequests` of it, kept in its
 * spec: counted against quota and enforced (a memory ceiling for a job that asked for nothing).
 * Returns the spec and the resources given so.
 */
function withDefaultRequests(
  spec: JobSpec,
  defaults: Record<string, string> | undefined,
): { spec: JobSpec; given: string[] } {
  const given = Object.keys(defaults ?? {}).filter((r) => spec.requests[r] === undefined);
  if (given.length === 0) return { spec, given };
  const requests = { ...spec.requests };
  for (const r of given) requests[r] = defaults![r]!;
  return { spec: { ...spec, requests }, given };
}

/** What a target gives a job that does not say: `defaultTimeout`, `defaultRequests`, `image`. */
export interface TargetDefaults {
  defaultTimeoutSeconds?: number;
  defaultRequests?: Record<string, string>;
  /** The image of its jobs that name none (written out in full). */
  image?: string;
}

/**
 * `spec` with its target's defaults, and what its timeline says of them (empty when none
 * applied): a job stopped after a timeout it never gave, or held to a memory it never asked for,
 * shows where that came from.
 */
export function withTargetDefaults(
  spec: JobSpec,
  target: string,
  defaults: TargetDefaults | undefined,
): { spec: JobSpec; note: string } {
  const timed = withDefaultTimeout(spec, defaults?.defaultTimeoutSeconds);
  const { spec: requested, given } = withDefaultRequests(timed, defaults?.defaultRequests);
  const imaged = requested.image === undefined && defaults?.image !== undefined;
  const out = imaged ? { ...requested, image: defaults.image } : requested;
  const note =
    (timed !== spec && out.timeoutSeconds !== null
      ? `; timeout ${formatSpan(out.timeoutSeconds * 1000, 2)}, target ${target}'s defaultTimeout`
      : '') +
    (given.length > 0
      ? `; requests ${given.map((r) => `${r}=${out.requests[r]}`).join(', ')}, target ${target}'s defaultRequests`
      : '') +
    (imaged ? `; image ${out.image}, target ${target}'s image` : '');
  return { spec: out, note };
}

/** What the audit keeps of a submission: never its command or env values, which may hold secrets. */
export function submissionDetail(name: string, target: string, spec: JobSpec): Record<string, unknown> {
  const env = Object.keys(spec.env);
  return {
    name,
    target,
    ...(env.length > 0 ? { env } : {}),
    ...((spec.workers ?? 1) > 1 ? { workers: spec.workers } : {}),
    ...(spec.array !== undefined ? { array: spec.array } : {}),
    ...(spec.image !== undefined ? { image: spec.image } : {}),
    ...(spec.interactive ? { interactive: true } : {}),
  };
}

const CONTROL_CHARACTERS = new RegExp(CONTROL_CHARACTER, 'g');

/** The name of a job that gives none: its command's (its image's when it runs the image's own), cleaned. */
export function defaultName(command: string[], image?: string): string {
  const own = image !== undefined ? imageParts(image).image.replace(/:[^:/]*$/, '') : 'job';
  const first = command[0] === '/bin/sh' && command[1] === '-c' ? 'script' : (command[0] ?? own);
  // A name given is refused with a control character (api/job-schemas.ts); one made is cleaned.
  return first.split('/').pop()!.replace(CONTROL_CHARACTERS, '').slice(0, 63) || 'job';
}
