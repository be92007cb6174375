/** Factories, targets, resource types (live figures) and the record of workers and instances. */
import type { PoolFigures, ResourceTypeView, TargetView } from '../../domain/pool-figures.js';
import type { InstanceState, InstanceView } from '../../domain/resource-instance.js';
import type { Principal } from '../../domain/user.js';
import type { WorkerState, WorkerView } from '../../domain/worker.js';
import { formatAmount } from '../../domain/quantity.js';
import { listInstances } from '../../store/queries/resource-instances.js';
import { listWorkers } from '../../store/queries/workers.js';
import { requireAdmin, requireUser } from '../tenancy/access.js';
import { type ServiceContext, type With } from '../context.js';
import { resourceTypeViews } from '../live/figures.js';

export function factories(ctx: With<'runtime'>, p: Principal): PoolFigures[] {
  requireUser(p);
  return ctx.runtime.controller.factoryFigures();
}

export function targets(ctx: With<'runtime'>, p: Principal): TargetView[] {
  requireUser(p);
  const rt = ctx.runtime;
  const figures = new Map(rt.controller.factoryFigures().map((f) => [f.name, f]));
  return Object.entries(rt.targets).map(([name, t]) => {
    const f = figures.get(t.factory);
    return {
      name,
      factory: t.factory,
      privilege: t.privilege ?? null,
      default: name === rt.defaultTarget,
      reuse: t.reuse === true,
      defaultTimeoutSeconds: t.defaultTimeoutSeconds ?? null,
      defaultRequests: t.defaultRequests ?? {},
      maxRequests: Object.fromEntries(
        Object.entries(t.maxRequests ?? {}).map(([r, max]) => [r, formatAmount(r, max)]),
      ),
      isolation: rt.isolation?.[t.factory] ?? null,
      devices: rt.devices?.[t.factory]?.summary ?? null,
      image: t.image ?? null,
      registries: t.registries ?? null,
      imagesRefused: rt.imagesRefused?.[name] ?? null,
      capacity: f?.capacity ?? 0,
      inUse: f?.inUse ?? 0,
      waiting: f?.waiting ?? 0,
    };
  });
}

export function resourceTypes(ctx: With<'runtime'>, p: Principal): ResourceTypeView[] {
  requireUser(p);
  return resourceTypeViews(ctx.runtime);
}

export async function workers(ctx: ServiceContext, p: Principal, state?: WorkerState): Promise<WorkerView[]> {
  requireAdmin(p, 'list workers');
  return listWorkers(ctx.store.db, state);
}

/** Never with metadata: that is for the job holding the instance only. */
export async function instances(
  ctx: ServiceContext,
  p: Principal,
  state?: InstanceState,
): Promise<InstanceView[]> {
  requireAdmin(p, 'list resource instances');
  return listInstances(ctx.store.db, state);
}
