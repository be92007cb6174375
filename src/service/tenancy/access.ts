/**
 * Authorization in one place. Admins may do anything. Project members act within their
 * projects by role; to anyone else a project does not exist (404, so names do not leak).
 * Job tokens reach only their own job, never these endpoints. Project tokens (made by the
 * `token` well for a running job) may only make the calls listed below, in their one project,
 * with the role their access stands for: a viewer (`read`, the default) or a member (`submit`).
 */
import { ForbiddenError, NotFoundError } from '../../domain/errors.js';
import type { Project } from '../../domain/project.js';
import { roleAtLeast, type Role } from '../../domain/roles.js';
import { projectTokenRole, type ProjectTokenAccess } from '../../domain/project-token-access.js';
import type { Principal, User } from '../../domain/user.js';
import { findProject, findRole } from '../../store/queries/projects.js';
import type { Db } from '../../store/store.js';
import type { ProjectCache } from './project-cache.js';

/**
 * The API calls (method and route, below the API prefix) a project token may make, and the access
 * each needs. A project token is handed to a job's process and may leak with its output, so this
 * is a list of what is allowed, not of what is refused: a route added later is closed to project
 * tokens until it is listed here — and none that changes a project, reaches beyond one, or serves
 * resource metadata (`/job/self`) ever should be. Which project and which job a listed call
 * reaches is checked by the services as for anyone (requireProject): another project's is a 404.
 */
const PROJECT_TOKEN_CALLS = new Map<string, ProjectTokenAccess>([
  // What the token is (its project and job): nothing the job does not know already.
  ['GET /whoami', 'read'],
  ['GET /projects/:name', 'read'],
  ['GET /projects/:name/jobs', 'read'],
  ['GET /jobs/:id', 'read'],
  ['GET /jobs/:id/events', 'read'],
  ['GET /jobs/:id/logs', 'read'],
  // A job's files, read as its logs are (a later job of the pipeline may fetch them).
  ['GET /jobs/:id/artifacts', 'read'],
  ['GET /jobs/:id/artifacts/*', 'read'],
  ['POST /projects/:name/jobs', 'submit'],
  ['POST /jobs/:id/cancel', 'submit'],
]);

/**
 * Called for every authenticated request before its handler: refuses (403) a call the principal
 * may never make, whatever its arguments. Only project tokens are limited here; everyone else is
 * checked by the services, object by object.
 */
export function authorizeCall(p: Principal, method: string, route: string): void {
  if (p.kind !== 'project') return;
  // Fastify answers HEAD with the GET route's handler.
  const call = `${method === 'HEAD' ? 'GET' : method} ${route}`;
  const needed = PROJECT_TOKEN_CALLS.get(call);
  if (needed === 'read' || (needed === 'submit' && p.access === 'submit')) return;
  const may =
    p.access === 'submit'
      ? 'read it (its jobs, their logs and events) and submit and cancel jobs there'
      : 'read it (its jobs, their logs and events); a token well with access: submit may also submit and cancel jobs';
  throw new ForbiddenError(
    `a project token with access ${p.access} may not call ${call}: it acts only in project "${p.project}", where it may ${may}`,
  );
}

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
 * A caller who is not a member gets 404; a member whose role is too low gets 403. Reads through
 * `cache` when given (outside a write transaction only: see project-cache.ts).
 */
export async function requireProject(
  db: Db,
  p: Principal,
  name: string,
  needed: Role,
  action: string,
  cache?: ProjectCache,
): Promise<{ project: Project; role: Role | 'admin' }> {
  const project = await (cache ? cache.project(db, name) : findProject(db, name));
  if (p.kind === 'project') {
    if (!project || p.project !== name) throw projectNotFound(name);
    const role = projectTokenRole(p.access);
    if (!roleAtLeast(role, needed)) {
      throw new ForbiddenError(
        `${action} in project "${name}" needs role ${needed}; a project token with access ${p.access} acts as a ${role}`,
      );
    }
    return { project, role };
  }
  const user = requireUser(p);
  if (!project) throw projectNotFound(name);
  if (user.admin) return { project, role: 'admin' };
  const role = await (cache ? cache.role(db, name, user.id) : findRole(db, name, user.id));
  if (!role) throw projectNotFound(name);
  if (!roleAtLeast(role, needed)) {
    throw new ForbiddenError(
      `${action} in project "${name}" needs role ${needed} or higher; you are ${role}`,
    );
  }
  return { project, role };
}
