/**
 * What `berth submit` and `berth run` share: the options that make a job's spec (its name,
 * target, requests, resources, priority, environment, time limit, retries, dependencies,
 * artifacts, image), and the submission body they make.
 */
import type { Command } from 'commander';
import { UsageError } from './errors.js';
import {
  backoffSeconds,
  each,
  envEntry,
  jobIds,
  priority,
  quantityList,
  repeatable,
  retryCount,
  timeoutSeconds,
} from './flags.js';
import type { CommonFlags } from './session.js';

export interface SubmitFlags extends CommonFlags {
  name?: string;
  target?: string;
  request?: Record<string, string>;
  resource?: string[];
  priority?: number | string;
  env?: Record<string, string>;
  timeout?: number;
  workers?: number;
  artifact?: string[];
  image?: string;
  array?: string;
  retries?: number;
  infraRetries?: number;
  retryBackoff?: number;
  after?: number[];
  afterAny?: number[];
  afterFailed?: number[];
  idempotencyKey?: string;
  script?: string;
  wait?: boolean;
  follow?: boolean;
}

/** Adds the options every submitting command takes to `cmd`. */
export function jobSpecOptions(cmd: Command): Command {
  return cmd
    .option('--name <name>', 'a name for the job (default: the command)')
    .option('--target <target>', 'where to run it (default: the server default target)')
    .option('--request <quantities>', 'resources to reserve: cpu=2,memory=4Gi (repeatable)', quantityList)
    .option('--resource <type>', 'a managed resource to give the job (repeat for more)', repeatable)
    .option(
      '--priority <n|class>',
      'a number (higher is admitted first; default 0) or a priority class (berth priority list)',
      priority,
    )
    .option('--env <name=value>', 'an environment variable; NAME alone passes ours on (repeatable)', envEntry)
    .option(
      '--timeout <duration>',
      "stop it after this long: 90 (seconds), 90s, 10m, 1h30m (default: the target's defaultTimeout, if any)",
      timeoutSeconds,
    )
    .option(
      '--retries <n>',
      'run it again up to n times after its own failures (a non-zero exit, its timeout); default 0',
      retryCount,
    )
    .option(
      '--infra-retries <n>',
      "run it again up to n times after the infrastructure's failures (its worker lost, its node failed); default 0. Preemption is never charged",
      retryCount,
    )
    .option(
      '--retry-backoff <duration>',
      "the first retry's delay, doubled for each later one, with jitter: 0, 30s, 2m (default 10s)",
      backoffSeconds,
    )
    .option('--after <job>', 'run only after this job has succeeded (repeatable)', jobIds)
    .option('--after-any <job>', 'run only after this job has ended, however it ended (repeatable)', jobIds)
    .option(
      '--after-failed <job>',
      'run only after this job has failed or been cancelled (repeatable); cancelled if it succeeds',
      jobIds,
    )
    .option(
      '--artifact <glob>',
      "keep the files this glob matches in the job's working directory when it has run, e.g. 'results/*.csv' (repeatable; see berth artifacts)",
      each,
    )
    .option(
      '--image <ref>',
      "run it in this OCI image (registry/name:tag, or @sha256:…), pinned to its digest when admitted: the image's Entrypoint runs the command, or its Cmd without one (default: the target's image, if any)",
    )
    .option('--idempotency-key <key>', 'submitting again with the same key returns the same job');
}

/** The submission body: what was given, nothing else. */
export function submitBody(command: string[], f: SubmitFlags): Record<string, unknown> {
  if (f.script !== undefined && command.length > 0) {
    throw new UsageError('give either --script or a command after --, not both');
  }
  // In an image, no command runs the image's own (its Entrypoint and Cmd), as docker run does.
  if (f.script === undefined && command.length === 0 && f.image === undefined) {
    throw new UsageError(
      "nothing to run: give a command (berth submit -- CMD [ARG...]), --script 'CODE', or --image REF to run the image's own",
    );
  }
  const given = {
    name: f.name,
    ...(f.script !== undefined ? { script: f.script } : command.length > 0 ? { command } : {}),
    image: f.image,
    target: f.target,
    requests: f.request,
    resources: f.resource,
    priority: f.priority,
    env: f.env,
    timeoutSeconds: f.timeout,
    workers: f.workers,
    array: f.array,
    artifacts: f.artifact,
    retries: f.retries,
    infraRetries: f.infraRetries,
    retryBackoffSeconds: f.retryBackoff,
    dependsOn: f.after,
    dependsOnAny: f.afterAny,
    dependsOnFailed: f.afterFailed,
    idempotencyKey: f.idempotencyKey,
  };
  return Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
}
