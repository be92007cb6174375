import type { Project, ProjectMember } from '../../domain/project.js';
import type { Role } from '../../domain/roles.js';
import type { ProjectRow } from '../schema.js';
import type { Db } from '../store.js';
import { iso } from './time.js';

const toProject = (r: ProjectRow): Project => ({
  name: r.name,
  description: r.description,
  tags: JSON.parse(r.tags) as string[],
  clusterQueue: r.cluster_queue,
  active: r.active === 1,
  weight: Number(r.weight),
  maxQueued: r.max_queued === null ? null : Number(r.max_queued),
  createdAt: iso(r.created_at),
  updatedAt: iso(r.updated_at),
});

export type ProjectFields = Pick<
  Project,
  'name' | 'description' | 'tags' | 'clusterQueue' | 'active' | 'weight' | 'maxQueued'
>;

export async function insertProject(db: Db, p: ProjectFields, now: number): Promise<void> {
  await db
    .insertInto('projects')
    .values({
      name: p.name,
      description: p.description,
      tags: JSON.stringify(p.tags),
      cluster_queue: p.clusterQueue,
      active: p.active ? 1 : 0,
      weight: p.weight,
      max_queued: p.maxQueued,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

export async function updateProject(db: Db, p: ProjectFields, now: number): Promise<void> {
  await db
    .updateTable('projects')
    .set({
      description: p.description,
      tags: JSON.stringify(p.tags),
      cluster_queue: p.clusterQueue,
      active: p.active ? 1 : 0,
      weight: p.weight,
      max_queued: p.maxQueued,
      updated_at: now,
    })
    .where('name', '=', p.name)
    .execute();
}

export async function findProject(db: Db, name: string): Promise<Project | undefined> {
  const row = await db.selectFrom('projects').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toProject(row);
}

/** All projects, or only those `userId` is a member of. */
export async function listProjects(db: Db, memberId?: number): Promise<Project[]> {
  let q = db.selectFrom('projects').selectAll('projects');
  if (memberId !== undefined) {
    q = q.innerJoin('project_members as m', 'm.project', 'projects.name').where('m.user_id', '=', memberId);
  }
  return (await q.orderBy('projects.name').execute()).map(toProject);
}

export async function projectsUsingQueue(db: Db, queue: string): Promise<string[]> {
  const rows = await db
    .selectFrom('projects')
    .select('name')
    .where('cluster_queue', '=', queue)
    .orderBy('name')
    .execute();
  return rows.map((r) => r.name);
}

export async function deleteProject(db: Db, name: string): Promise<void> {
  await db.deleteFrom('projects').where('name', '=', name).execute();
}

export async function findRole(db: Db, project: string, userId: number): Promise<Role | undefined> {
  const row = await db
    .selectFrom('project_members')
    .select('role')
    .where('project', '=', project)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row?.role as Role | undefined;
}

export async function listMembers(db: Db, project: string): Promise<ProjectMember[]> {
  const rows = await db
    .selectFrom('project_members as m')
    .innerJoin('users as u', 'u.id', 'm.user_id')
    .select(['u.name', 'm.role'])
    .where('m.project', '=', project)
    .orderBy('u.name')
    .execute();
  return rows.map((r) => ({ user: r.name, role: r.role as Role }));
}

export async function upsertMember(db: Db, project: string, userId: number, role: Role): Promise<void> {
  await db
    .insertInto('project_members')
    .values({ project, user_id: userId, role })
    .onConflict((oc) => oc.columns(['project', 'user_id']).doUpdateSet({ role }))
    .execute();
}

export async function deleteMember(db: Db, project: string, userId: number): Promise<boolean> {
  const r = await db
    .deleteFrom('project_members')
    .where('project', '=', project)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function listPrivileges(db: Db, project: string): Promise<string[]> {
  const rows = await db
    .selectFrom('project_privileges')
    .select('privilege')
    .where('project', '=', project)
    .orderBy('privilege')
    .execute();
  return rows.map((r) => r.privilege);
}

/** Every project's privileges (the controller's rebuild on start). */
export async function listAllPrivileges(db: Db): Promise<{ project: string; privilege: string }[]> {
  return db.selectFrom('project_privileges').select(['project', 'privilege']).execute();
}

export async function insertPrivilege(db: Db, project: string, privilege: string): Promise<boolean> {
  const r = await db
    .insertInto('project_privileges')
    .values({ project, privilege })
    .onConflict((oc) => oc.doNothing())
    .executeTakeFirst();
  return Number(r.numInsertedOrUpdatedRows ?? 0) > 0;
}

export async function deletePrivilege(db: Db, project: string, privilege: string): Promise<boolean> {
  const r = await db
    .deleteFrom('project_privileges')
    .where('project', '=', project)
    .where('privilege', '=', privilege)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}
