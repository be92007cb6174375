/**
 * Whether a submission could ever run, checked before it is written: its target and resource
 * types exist and its project may use them, it fits what its target's factory and its cluster
 * queue could ever give, and the jobs it depends on are its project's. Each refusal is a 422
 * naming the field. Reads privileges and job ids from the store, the rest from the runtime.
 */
import { JOBS_RESOURCE } from '../../domain/cluster-queue.js';
import { maxReachable } from '../../domain/capacity.js';
import { ConflictError, UnprocessableError } from '../../domain/errors.js';
import type { JobSpec } from '../../domain/job.js';
import { dependenciesOf, type DependencyCondition } from '../../domain/dependency.js';
import { formatAmount, parseAmount, type QuantityInput } from '../../domain/quantity.js';
import { existingJobIds } from '../../store/queries/jobs.js';
import { listPrivileges } from '../../store/queries/projects.js';
import type { Db } from '../../store/store.js';
import type { QueueModel } from '../../controller/port.js';
import type { JobRuntime } from '../context.js';
import { parseImageReference, registryRefusal } from '../../images/reference.js';

/**
 * Refuses with 422 anything that could never run: unknown target or resource, missing privilege,
 * too big. Returns the project's cluster queue.
 */
export async function checkRunnable(
  db: Db,
  rt: JobRuntime,
  project: string,
  queueName: string,
  target: string,
  spec: JobSpec,
): Promise<QueueModel> {
  const targetConfig = rt.targets[target];
  if (!targetConfig) {
    throw new UnprocessableError(
      `unknown target "${target}" (known: ${Object.keys(rt.targets).join(', ') || 'none'})`,
    );
  }
  // Read only when something asks for one: most jobs need none, and each read is a round trip.
  let read: Set<string> | undefined;
  const has = async (privilege: string) =>
    (read ??= new Set(await listPrivileges(db, project))).has(privilege);
  if (targetConfig.privilege && !(await has(targetConfig.privilege))) {
    throw new UnprocessableError(
      `target "${target}" requires privilege ${targetConfig.privilege}, which project "${project}" does not have`,
    );
  }
  for (const type of spec.resources) {
    const rtype = rt.resourceTypes[type];
    if (!rtype)
      throw new UnprocessableError(
        `unknown resource type "${type}" (known: ${Object.keys(rt.resourceTypes).join(', ') || 'none'})`,
      );
    if (rtype.privilege && !(await has(rtype.privilege))) {
      throw new UnprocessableError(
        `resource type "${type}" requires privilege ${rtype.privilege}, which project "${project}" does not have`,
      );
    }
  }
  if (spec.image !== undefined) checkImage(rt, target, spec.image);
  if (spec.interactive) checkInteractive(rt, target, spec);
  const limit = rt.workerTimeLimits?.[target];
  if (limit !== undefined && spec.timeoutSeconds !== null && spec.timeoutSeconds > limit) {
    throw new UnprocessableError(
      `timeoutSeconds: ${spec.timeoutSeconds} is longer than target "${target}" lets a worker run (${limit} s, its factory's timeLimit): the job would be stopped before its timeout`,
    );
  }
  const workers = spec.workers ?? 1;
  const capacity = rt.workerCapacity?.[target];
  if (capacity !== undefined && workers > capacity) {
    throw new UnprocessableError(
      `workers: ${workers} is more than target "${target}" can ever give at once (its factory's capacity is ${capacity})`,
    );
  }
  checkDevices(rt, target, spec.requests, workers);
  for (const [resource, max] of Object.entries(targetConfig.maxRequests ?? {})) {
    const text = spec.requests[resource];
    if (text !== undefined && parseAmount(resource, text) > max)
      throw new UnprocessableError(
        `requests.${resource}: ${text}${workers > 1 ? ' per worker' : ''} is more than target "${target}" lets a job ask for (maxRequests.${resource}: ${formatAmount(resource, max)})`,
      );
  }
  const queues = [...rt.controller.queueModels()];
  const queue = queues.find((q) => q.name === queueName);
  if (!queue)
    throw new ConflictError(`project "${project}" uses cluster queue "${queueName}", which does not exist`);
  for (const [resource, text] of Object.entries(spec.requests)) {
    const amount = parseAmount(resource, text) * workers;
    const max = maxReachable(queue, queues, resource);
    if (amount > max) {
      const asked = workers > 1 ? `${text} × ${workers} workers` : text;
      throw new UnprocessableError(
        `requests.${resource}: ${asked} is more than cluster queue "${queueName}" can ever grant (${formatAmount(resource, max)})`,
      );
    }
  }
  if (maxReachable(queue, queues, JOBS_RESOURCE) < 1) {
    throw new UnprocessableError(
      `cluster queue "${queueName}" has a jobs quota of 0: it can never admit a job`,
    );
  }
  return queue;
}

/**
 * An interactive job: a target that can give it a terminal, one worker, and a time limit (its own
 * or its target's defaultTimeout): it holds its quota while a person works, so it must end.
 */
function checkInteractive(rt: JobRuntime, target: string, spec: JobSpec): void {
  const refused = rt.interactiveRefused?.[target];
  if (refused)
    throw new UnprocessableError(`interactive: target "${target}" cannot run interactive jobs: ${refused}`);
  if ((spec.workers ?? 1) > 1) throw new UnprocessableError('interactive: an interactive job has one worker');
  if (spec.array !== undefined)
    throw new UnprocessableError('interactive: an interactive job is not an array');
  if (spec.timeoutSeconds === null)
    throw new UnprocessableError(
      `interactive: an interactive job needs a time limit: give one (timeoutSeconds; berth run --timeout 2h), or set target "${target}"'s defaultTimeout`,
    );
}

/** The submission field that gives each kind of dependency. */
const FIELD_OF: Record<DependencyCondition, string> = {
  success: 'dependsOn',
  end: 'dependsOnAny',
  failure: 'dependsOnFailed',
};

/** Refuses (422) a dependency on a job that is not in `project`, naming the field and the ids. */
export async function checkDependencies(db: Db, project: string, spec: JobSpec): Promise<void> {
  const deps = dependenciesOf(spec);
  const known = await existingJobIds(db, project, [...new Set(deps.map((d) => d.job))]);
  const unknown = deps.find((d) => !known.has(d.job));
  if (!unknown) return;
  const field = FIELD_OF[unknown.on];
  const missing = deps.filter((d) => d.on === unknown.on && !known.has(d.job)).map((d) => d.job);
  throw new UnprocessableError(`${field}: no job ${missing.join(', ')} in project "${project}"`);
}

/** Refuses (422) an image the target cannot run, or from a registry it does not allow. */
function checkImage(rt: JobRuntime, target: string, image: string): void {
  const why = rt.imagesRefused?.[target];
  if (why) throw new UnprocessableError(`image: target "${target}" cannot run jobs in images: ${why}`);
  const refused = registryRefusal(parseImageReference(image), rt.targets[target]?.registries, target);
  if (refused) throw new UnprocessableError(`image: ${refused}`);
}

/**
 * A worker member asks for more devices of a kind than its target's factory has: it could never
 * start (docs/DEVICES.md).
 */
function checkDevices(
  rt: JobRuntime,
  target: string,
  requests: Record<string, QuantityInput>,
  workers: number,
): void {
  const factory = rt.targets[target]?.factory;
  const counts = factory === undefined ? undefined : rt.devices?.[factory]?.counts;
  if (!counts) return;
  for (const [kind, have] of Object.entries(counts)) {
    const text = requests[kind];
    if (text === undefined) continue;
    const perMember = Math.ceil(parseAmount(kind, text));
    if (perMember > have)
      throw new UnprocessableError(
        `requests.${kind}: ${String(text)}${workers > 1 ? ' per worker' : ''} is more than target "${target}" can ever give (factory ${factory} has ${have} ${kind})`,
      );
  }
}
