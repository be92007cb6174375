/**
 * What the leader's start-time estimates forecast from (`GET /scheduler/forecast-input`), for
 * `berth simulate --from-server` to replay with a change. Anyone signed in may read it, as anyone
 * may read a queue's pending list, and sees what that list shows: a job of a project the caller is
 * not a member of is counted (its place matters to everyone behind it) but anonymous — its project
 * under a stand-in name (`~1`, `~2`, … — fair share still tells projects apart) and its id a
 * stand-in too (negative, after the projected arrivals' -1, -2, …), so that neither can be looked
 * up or followed. Jobs appear by id, queue, priority, submission time and requests only; admins
 * see every name and id.
 */
import { UnavailableError } from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import type { ForecastInput, ForecastPending } from '../../controller/port.js';
import { listProjects } from '../../store/queries/projects.js';
import { requireUser } from '../tenancy/access.js';
import type { ServiceContext } from '../context.js';

export async function forecastInput(ctx: ServiceContext, p: Principal): Promise<ForecastInput> {
  const user = requireUser(p);
  const input = ctx.runtime?.controller.forecastInput();
  if (!input) throw new UnavailableError('no scheduler here: ask the leader');
  const visible = user.admin
    ? undefined
    : new Set((await listProjects(ctx.store.db, user.id)).map((x) => x.name));
  const names = new Map<string, string>();
  // Stand-in ids go below the projected arrivals' (-1 … -P), so no two workloads share one.
  let nextId = -(input.projected?.length ?? 0);
  const anonymous = <W extends ForecastPending['workload']>(w: W): W => {
    if (!visible || visible.has(w.project)) return w;
    let project = names.get(w.project);
    if (project === undefined) names.set(w.project, (project = `~${names.size + 1}`));
    // A projected arrival's id (negative) names no job: only real ones are replaced.
    return { ...w, project, id: w.id < 0 ? w.id : --nextId };
  };
  // Only what a forecast reads: no runtime bases, no more of the job.
  const pending = (x: ForecastPending): ForecastPending => ({
    workload: anonymous(x.workload),
    runtimeMs: x.runtimeMs,
    ...(x.arrivesAt === undefined ? {} : { arrivesAt: x.arrivesAt }),
  });
  return {
    now: input.now,
    queues: input.queues,
    weights: (input.weights ?? []).filter(([project]) => !visible || visible.has(project)),
    admitted: input.admitted.map((a) => ({
      workload: anonymous(a.workload),
      endsAt: a.endsAt,
      runtimeMs: a.runtimeMs,
    })),
    pending: input.pending.map(pending),
    projected: (input.projected ?? []).map(pending),
  };
}
