import type { ClusterQueue, ClusterQueueSpec } from '../../domain/cluster-queue.js';
import type { ClusterQueueRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

const toQueue = (r: ClusterQueueRow): ClusterQueue => ({
  name: r.name,
  ...(JSON.parse(r.spec) as Omit<ClusterQueueSpec, 'name'>),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

const specJson = ({ name: _name, ...rest }: ClusterQueueSpec): string => JSON.stringify(rest);

export async function insertClusterQueue(db: Db, spec: ClusterQueueSpec, now: number): Promise<void> {
  await db
    .insertInto('cluster_queues')
    .values({ name: spec.name, spec: specJson(spec), created_at: now, updated_at: now })
    .execute();
}

export async function updateClusterQueue(db: Db, spec: ClusterQueueSpec, now: number): Promise<void> {
  await db
    .updateTable('cluster_queues')
    .set({ spec: specJson(spec), updated_at: now })
    .where('name', '=', spec.name)
    .execute();
}

export async function findClusterQueue(db: Db, name: string): Promise<ClusterQueue | undefined> {
  const row = await db.selectFrom('cluster_queues').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toQueue(row);
}

export async function listClusterQueues(db: Db): Promise<ClusterQueue[]> {
  return (await db.selectFrom('cluster_queues').selectAll().orderBy('name').execute()).map(toQueue);
}

export async function deleteClusterQueue(db: Db, name: string): Promise<void> {
  await db.deleteFrom('cluster_queues').where('name', '=', name).execute();
}
