/**
 * What the leader's start-time estimates forecast from (`GET /scheduler/forecast-input`), for
 * `berth simulate --from-server` to replay with a change. Anyone signed in may read it, as anyone
 * may read a queue's pending list; a project the caller is not a member of appears under a
 * stand-in name (`~1`, `~2`, … — fair share still tells its jobs apart), as the pending list hides
 * it. Jobs appear by id, queue, priority, submission time and requests only.
 */
import { UnavailableError } from '../domain/errors.js';
import type { Principal } from '../domain/user.js';
import type { ForecastInput, ForecastPending } from '../controller/port.js';
import { listProjects } from '../store/queries/projects.js';
import { requireUser } from './access.js';
import type { ServiceContext } from './context.js';

export async function forecastInput(ctx: ServiceContext, p: Principal): Promise<ForecastInput> {
  const user = requireUser(p);
  const input = ctx.runtime?.controller.forecastInput();
  if (!input) throw new UnavailableError('no scheduler here: ask the leader');
  const visible = user.admin
    ? undefined
    : new Set((await listProjects(ctx.store.db, user.id)).map((x) => x.name));
  const names = new Map<string, string>();
  const shown = (project: string): string => {
    if (!visible || visible.has(project)) return project;
    let name = names.get(project);
    if (name === undefined) names.set(project, (name = `~${names.size + 1}`));
    return name;
  };
  // Only what a forecast reads: no runtime bases, no more of the job.
  const pending = (x: ForecastPending): ForecastPending => ({
    workload: { ...x.workload, project: shown(x.workload.project) },
    runtimeMs: x.runtimeMs,
    ...(x.arrivesAt === undefined ? {} : { arrivesAt: x.arrivesAt }),
  });
  return {
    now: input.now,
    queues: input.queues,
    weights: (input.weights ?? []).filter(([project]) => !visible || visible.has(project)),
    admitted: input.admitted.map((a) => ({
      workload: { ...a.workload, project: shown(a.workload.project) },
      endsAt: a.endsAt,
      runtimeMs: a.runtimeMs,
    })),
    pending: input.pending.map(pending),
    projected: (input.projected ?? []).map(pending),
  };
}
