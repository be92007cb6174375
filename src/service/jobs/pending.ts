/**
 * A cluster queue's pending jobs in admission order. Anyone signed in may read a queue, but a
 * job is shown only to who may see its project: the others are counted (their place matters to
 * everyone behind them) and stay anonymous.
 */
import { NotFoundError } from '../../domain/errors.js';
import type { PendingEntry } from '../../domain/job.js';
import type { Principal } from '../../domain/user.js';
import { findClusterQueue } from '../../store/queries/cluster-queues.js';
import { findJobs } from '../../store/queries/jobs.js';
import { listProjects } from '../../store/queries/projects.js';
import { iso, isoOrNull } from '../../store/queries/time.js';
import { requireUser } from '../tenancy/access.js';
import type { ServiceContext } from '../context.js';

export async function pendingJobs(
  ctx: ServiceContext,
  p: Principal,
  queue: string,
  offset: number,
  limit: number,
): Promise<PendingEntry[]> {
  const user = requireUser(p);
  const db = ctx.store.db;
  if (!(await findClusterQueue(db, queue))) throw new NotFoundError(`cluster queue "${queue}" not found`);
  const ids = ctx.runtime?.controller.pendingIds(queue, offset, limit) ?? [];
  const [rows, visible] = await Promise.all([
    findJobs(db, ids),
    user.admin ? undefined : listProjects(db, user.id).then((ps) => new Set(ps.map((x) => x.name))),
  ]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id, i): PendingEntry => {
    const position = offset + i + 1;
    const estimate = ctx.runtime?.controller.explain(id)?.estimate;
    const estimatedStartAt = isoOrNull(estimate?.startAt ?? null);
    const row = byId.get(id);
    if (!row || (visible && !visible.has(row.project))) return { position, estimatedStartAt, hidden: true };
    return {
      position,
      estimatedStartAt,
      id,
      project: row.project,
      name: row.name,
      priority: row.priority,
      createdAt: iso(row.createdAt),
    };
  });
}
