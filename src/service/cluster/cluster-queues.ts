import type { ClusterQueue, ClusterQueueView } from '../../domain/cluster-queue.js';
import {
  buildClusterQueueSpec,
  patchClusterQueueSpec,
  type ClusterQueueInput,
  type ClusterQueuePatch,
} from '../../domain/cluster-queue-spec.js';
import { ConflictError, NotFoundError } from '../../domain/errors.js';
import { formatAmounts } from '../../domain/quantity.js';
import type { Principal } from '../../domain/user.js';
import {
  deleteClusterQueue,
  findClusterQueue,
  insertClusterQueue,
  listClusterQueues,
  updateClusterQueue,
} from '../../store/queries/cluster-queues.js';
import { countUnfinishedInQueue } from '../../store/queries/jobs.js';
import { appendEvent } from '../../store/queries/events.js';
import { projectsUsingQueue } from '../../store/queries/projects.js';
import { requireAdmin, requireUser } from '../tenancy/access.js';
import { audit } from '../tenancy/audit.js';
import type { ServiceContext } from '../context.js';
import { commitUnit } from '../live/notices.js';

export type { ClusterQueueView };

const notFound = (name: string) => new NotFoundError(`cluster queue "${name}" not found`);

/** A queue as GET shows it: its spec with the scheduler's live figures. */
export function queueView(ctx: ServiceContext, q: ClusterQueue): ClusterQueueView {
  const s = ctx.queueStatus?.(q.name) ?? { usage: {}, borrowed: {}, pending: 0, admitted: 0, running: 0 };
  return {
    ...q,
    usage: formatAmounts(s.usage),
    borrowed: formatAmounts(s.borrowed),
    pending: s.pending,
    admitted: s.admitted,
    running: s.running,
  };
}

export async function createClusterQueue(
  ctx: ServiceContext,
  p: Principal,
  input: ClusterQueueInput,
): Promise<ClusterQueueView> {
  requireAdmin(p, 'create cluster queues');
  return createClusterQueueUnchecked(ctx, input, p);
}

/** For bootstrap too: without `by`, the audit says the server did it (`system`). */
export async function createClusterQueueUnchecked(
  ctx: ServiceContext,
  input: ClusterQueueInput,
  by?: Principal,
): Promise<ClusterQueueView> {
  const spec = buildClusterQueueSpec(input);
  const queue = await commitUnit(ctx, async (db, announce) => {
    if (await findClusterQueue(db, spec.name))
      throw new ConflictError(`cluster queue "${spec.name}" already exists`);
    const now = ctx.now();
    await insertClusterQueue(db, spec, now);
    await appendEvent(
      db,
      {
        subjectKind: 'cluster-queue',
        subject: spec.name,
        type: 'created',
        message: `cluster queue ${spec.name} created`,
        data: spec,
      },
      now,
    );
    await audit(db, by, { action: 'queue.create', subject: spec.name, detail: { ...spec } }, now);
    const queue = (await findClusterQueue(db, spec.name))!;
    announce({ kind: 'queue', name: queue.name, queue });
    return queue;
  });
  return queueView(ctx, queue);
}

export async function listQueues(ctx: ServiceContext, p: Principal): Promise<ClusterQueueView[]> {
  requireUser(p);
  return (await listClusterQueues(ctx.store.db)).map((q) => queueView(ctx, q));
}

/** Any signed-in user may read queues: they need to see the quota their projects draw on. */
export async function getQueue(ctx: ServiceContext, p: Principal, name: string): Promise<ClusterQueueView> {
  requireUser(p);
  const q = await findClusterQueue(ctx.store.db, name);
  if (!q) throw notFound(name);
  return queueView(ctx, q);
}

export async function updateQueue(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  patch: ClusterQueuePatch,
): Promise<ClusterQueueView> {
  requireAdmin(p, 'change cluster queues');
  const queue = await commitUnit(ctx, async (db, announce) => {
    const current = await findClusterQueue(db, name);
    if (!current) throw notFound(name);
    const spec = patchClusterQueueSpec(current, patch);
    const now = ctx.now();
    await updateClusterQueue(db, spec, now);
    await appendEvent(
      db,
      {
        subjectKind: 'cluster-queue',
        subject: name,
        type: 'updated',
        message: `cluster queue ${name} updated`,
        data: patch,
      },
      now,
    );
    // A hold or a drain is a patch of stopPolicy: the detail says which.
    await audit(db, p, { action: 'queue.update', subject: name, detail: { ...patch } }, now);
    const queue = (await findClusterQueue(db, name))!;
    announce({ kind: 'queue', name, queue });
    return queue;
  });
  return queueView(ctx, queue);
}

export async function deleteQueue(ctx: ServiceContext, p: Principal, name: string): Promise<void> {
  requireAdmin(p, 'delete cluster queues');
  await commitUnit(ctx, async (db, announce) => {
    if (!(await findClusterQueue(db, name))) throw notFound(name);
    const users = await projectsUsingQueue(db, name);
    if (users.length > 0) {
      const list =
        users.slice(0, 10).join(', ') + (users.length > 10 ? ` and ${users.length - 10} more` : '');
      throw new ConflictError(
        `cluster queue "${name}" is used by project${users.length > 1 ? 's' : ''} ${list}; move or delete them first`,
      );
    }
    // Jobs keep the queue they were admitted to (or queued on before a move) until they end.
    const jobs = await countUnfinishedInQueue(db, name);
    if (jobs > 0)
      throw new ConflictError(
        `cluster queue "${name}" still has ${jobs} unfinished job${jobs > 1 ? 's' : ''}; wait for them to end or cancel them first`,
      );
    await deleteClusterQueue(db, name);
    const now = ctx.now();
    await appendEvent(
      db,
      {
        subjectKind: 'cluster-queue',
        subject: name,
        type: 'deleted',
        message: `cluster queue ${name} deleted`,
      },
      now,
    );
    await audit(db, p, { action: 'queue.delete', subject: name }, now);
    announce({ kind: 'queue', name, queue: undefined });
  });
}
