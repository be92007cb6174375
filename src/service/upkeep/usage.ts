/**
 * Usage reports (`GET /usage`, `berth usage`): resource·hours, jobs by outcome and waits over
 * whole hours, per project, user or queue, read from the hourly rollups only (never the ledger),
 * so a report costs the same over a million jobs as over ten. Allocations still running are not
 * in them: each is counted when it ends (domain/usage.ts).
 *
 * Admins see every project's usage, also that of projects since deleted; anyone else only the
 * projects they are a member of (another project named is 404, as everywhere).
 */
import type { Principal } from '../../domain/user.js';
import { usagePeriod, usageReport, type UsageGrouping, type UsageReport } from '../../domain/usage.js';
import { sumUsage } from '../../store/queries/usage.js';
import { requireProject, requireUser } from '../tenancy/access.js';
import type { ServiceContext } from '../context.js';
import { visibleProjectNames } from '../tenancy/projects.js';

export interface UsageQuery {
  /** ISO 8601 times, or spans back from now (`7d`, `12h`). */
  since?: string;
  until?: string;
  by?: UsageGrouping;
  project?: string;
}

export async function readUsage(ctx: ServiceContext, p: Principal, q: UsageQuery): Promise<UsageReport> {
  const user = requireUser(p);
  const db = ctx.store.db;
  const period = usagePeriod(q.since, q.until, ctx.now());
  const by = q.by ?? 'project';
  let projects: string[] | undefined;
  if (q.project !== undefined) {
    // Admins may ask for a project that is gone: its usage outlives it.
    if (!user.admin) await requireProject(db, p, q.project, 'viewer', 'reading usage');
    projects = [q.project];
  } else {
    const visible = await visibleProjectNames(ctx, p);
    projects = visible === 'all' ? undefined : [...visible];
  }
  return usageReport(period, by, await sumUsage(db, { ...period, by, projects }));
}
