/**
 * What an OCI image's config says a container of it runs (the image spec's `config`: Entrypoint,
 * Cmd, Env, WorkingDir, User), and how a job's own command and environment combine with it — as
 * `docker run IMAGE CMD…` and a Kubernetes container's `args` do: the job's command replaces the
 * image's Cmd and is passed to its Entrypoint; with no command of its own the job runs
 * Entrypoint + Cmd; the job's environment is laid over the image's; the image's working
 * directory is where a job without one of its own starts.
 *
 * The image's User is not followed: a job runs under a uid of its own, image or not
 * (docs/SECURITY.md), as OpenShift runs every image under an arbitrary uid.
 *
 * Pure: the JSON in, the job's argv and environment out.
 */

export interface ImageConfig {
  entrypoint: string[];
  cmd: string[];
  /** `NAME=value` lines, as the image gives them. */
  env: string[];
  /** `/` when the image names none. */
  workingDir: string;
  /** As the image says it (informational: see above). */
  user: string;
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string') ? v : [];

/** The config of an OCI (or Docker v2) image config blob; fields it lacks are empty. */
export function parseImageConfig(blob: unknown): ImageConfig {
  const c = (blob && typeof blob === 'object' ? (blob as { config?: unknown }).config : undefined) ?? {};
  const o = c as Record<string, unknown>;
  const dir = typeof o.WorkingDir === 'string' && o.WorkingDir.startsWith('/') ? o.WorkingDir : '/';
  return {
    entrypoint: strings(o.Entrypoint),
    cmd: strings(o.Cmd),
    env: strings(o.Env),
    workingDir: dir,
    user: typeof o.User === 'string' ? o.User : '',
  };
}

/**
 * The argv a job in the image runs: the image's Entrypoint, then the job's command if it gave
 * one, else the image's Cmd. Undefined when that is empty (the job must give a command).
 */
export function imageCommand(
  image: ImageConfig,
  command: readonly string[] | undefined,
): string[] | undefined {
  const argv = [...image.entrypoint, ...(command && command.length > 0 ? command : image.cmd)];
  return argv.length > 0 ? argv : undefined;
}

/** The image's environment as variables, with `own` (the job's) laid over it. */
export function imageEnv(image: ImageConfig, own: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of image.env) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return { ...env, ...own };
}
