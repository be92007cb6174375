/**
 * The figures the dashboard shows live: every cluster queue with its usage, the factories and the
 * resource types with capacity, use and waiting jobs. Taken from the controller's in-memory model
 * and a cache of the queue definitions, so a snapshot never reads a table.
 */
import type { ClusterQueue } from '../../domain/cluster-queue.js';
import type { Figures, ResourceTypeView } from '../../domain/pool-figures.js';
import { findClusterQueue, listClusterQueues } from '../../store/queries/cluster-queues.js';
import { queueView } from '../cluster/cluster-queues.js';
import type { JobRuntime, ServiceContext } from '../context.js';

/** Every configured resource type with its well's figures (`GET /resource-types`). */
export function resourceTypeViews(rt: JobRuntime): ResourceTypeView[] {
  const figures = new Map(rt.controller.resourceFigures().map((f) => [f.name, f]));
  return Object.entries(rt.resourceTypes).map(([name, t]) => {
    const f = figures.get(name);
    return {
      name,
      kind: f?.kind ?? '',
      privilege: t.privilege ?? null,
      capacity: f?.capacity ?? 0,
      inUse: f?.inUse ?? 0,
      waiting: f?.waiting ?? 0,
    };
  });
}

/** The queue definitions, read once and then kept up to date by `queueChanged` while a stream listens. */
export class LiveFigures {
  private queues: Map<string, ClusterQueue> | undefined;
  private loading: Promise<void> | undefined;

  constructor(private readonly ctx: ServiceContext) {}

  /** Reads the queue definitions the first time it is called (again if that read failed). */
  load(): Promise<void> {
    return (this.loading ??= listClusterQueues(this.ctx.store.db).then(
      (qs) => {
        this.queues = new Map(qs.map((q) => [q.name, q]));
      },
      (e: unknown) => {
        this.loading = undefined;
        throw e;
      },
    ));
  }

  /** Drops the cached definitions (no one keeps them current any more); the next load reads them. */
  forget(): void {
    this.queues = undefined;
    this.loading = undefined;
  }

  /** A queue was created, changed or deleted: one read by its key. */
  async queueChanged(name: string): Promise<void> {
    if (!this.loading) return; // never loaded: load() will read it
    await this.loading;
    const q = await findClusterQueue(this.ctx.store.db, name);
    if (q) this.queues?.set(name, q);
    else this.queues?.delete(name);
  }

  snapshot(): Figures {
    const rt = this.ctx.runtime;
    const queues = [...(this.queues?.values() ?? [])].sort((a, b) => (a.name < b.name ? -1 : 1));
    return {
      clusterQueues: queues.map((q) => queueView(this.ctx, q)),
      factories: rt?.controller.factoryFigures() ?? [],
      resourceTypes: rt ? resourceTypeViews(rt) : [],
    };
  }
}
