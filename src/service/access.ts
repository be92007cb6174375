/**
 * Authorization in one place. Admins may do anything. Project members act within their
 * projects by role; to anyone else a project does not exist (404, so names do not leak).
 * Job tokens reach only their own job, never these endpoints. Project tokens (made by the
 * `token` well for a running job) act as a member of their one project and nowhere else.
 */
import { ForbiddenError, NotFoundError } from '../domain/errors.js';
import type { Project } from '../domain/project.js';
import { roleAtLeast, type Role } from '../domain/roles.js';
import type { Principal, User } from '../domain/user.js';
import { findProject, findRole } from '../store/queries/projects.js';
import type { Db } from '../store/store.js';

export function requireUser(p: Principal): User {
  if (p.kind === 'project')
    throw new ForbiddenError(`a project token can only act in project "${p.project}"`);
  if (p.kind !== 'user')
    throw new ForbiddenError('a job token can only read its own job (GET /api/v1/job/self)');
  return p.user;
}

/** A name for the timeline: who did it. */
export function actorName(p: Principal): string {
  if (p.kind === 'user') return p.user.name;
  return p.kind === 'project' ? `job ${p.jobId} (project token)` : `job ${p.jobId}`;
}

export function requireAdmin(p: Principal, action: string): User {
  const user = requireUser(p);
  if (!user.admin) throw new ForbiddenError(`only admins can ${action}`);
  return user;
}

export const projectNotFound = (name: string) => new NotFoundError(`project "${name}" not found`);

/**
 * Loads `name` if the caller holds at least `needed` in it (admins hold everything).
 * A caller who is not a member gets 404; a member whose role is too low gets 403.
 */
export async function requireProject(
  db: Db,
  p: Principal,
  name: string,
  needed: Role,
  action: string,
): Promise<{ project: Project; role: Role | 'admin' }> {
  if (p.kind === 'project') {
    const project = p.project === name ? await findProject(db, name) : undefined;
    if (!project) throw projectNotFound(name);
    if (!roleAtLeast('member', needed)) {
      throw new ForbiddenError(
        `${action} in project "${name}" needs role ${needed}; a project token acts as a member`,
      );
    }
    return { project, role: 'member' };
  }
  const user = requireUser(p);
  const project = await findProject(db, name);
  if (!project) throw projectNotFound(name);
  if (user.admin) return { project, role: 'admin' };
  const role = await findRole(db, name, user.id);
  if (!role) throw projectNotFound(name);
  if (!roleAtLeast(role, needed)) {
    throw new ForbiddenError(
      `${action} in project "${name}" needs role ${needed} or higher; you are ${role}`,
    );
  }
  return { project, role };
}
