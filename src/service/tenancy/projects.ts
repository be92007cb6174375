import {
  BadRequestError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnprocessableError,
} from '../../domain/errors.js';
import { checkDnsLabel, checkName, PRIVILEGE, PRIVILEGE_HELP } from '../../domain/names.js';
import {
  MAX_QUEUED_LIMIT,
  MIN_PROJECT_WEIGHT,
  type Project,
  type ProjectDetail,
  type ProjectDetailView,
  type ProjectView,
} from '../../domain/project.js';
import { ROLES, type Role } from '../../domain/roles.js';
import type { Principal } from '../../domain/user.js';
import { findClusterQueue } from '../../store/queries/cluster-queues.js';
import { appendEvent, type EventInput } from '../../store/queries/events.js';
import {
  deleteMember,
  deletePrivilege,
  deleteProject,
  findProject,
  insertPrivilege,
  insertProject,
  listMembers,
  listPrivileges,
  listProjects,
  updateProject,
  upsertMember,
} from '../../store/queries/projects.js';
import { jobCountsOf, noJobs } from '../../store/queries/job-counts.js';
import { archiveProjectJobs, moveQueuedJobs, unfinishedJobIds, updateJob } from '../../store/queries/jobs.js';
import { findUserByName } from '../../store/queries/users.js';
import type { Db } from '../../store/store.js';
import { actorName, requireAdmin, requireProject, requireUser } from './access.js';
import { audit } from './audit.js';
import type { ServiceContext } from '../context.js';
import type { ControllerCommands } from '../../controller/port.js';
import { commitUnit, type Notice } from '../live/notices.js';

export interface ProjectInput {
  name: string;
  description?: string;
  tags?: string[];
  clusterQueue: string;
  active?: boolean;
  /** Fair-share weight (admins only; default 1). */
  weight?: number;
  /** The most of its jobs queued at once (admins only); null: its queue's default. */
  maxQueued?: number | null;
}

export type ProjectPatch = Partial<Omit<ProjectInput, 'name'>>;

const TAG = /^[A-Za-z0-9]([-A-Za-z0-9_.:/]{0,61}[A-Za-z0-9])?$/;

function checkWeight(weight: number): number {
  if (!Number.isFinite(weight) || weight <= 0)
    throw new BadRequestError(`weight ${weight} must be a number greater than 0`);
  if (weight < MIN_PROJECT_WEIGHT)
    throw new BadRequestError(
      `weight ${weight} is too small: the least is ${MIN_PROJECT_WEIGHT} (shares are divided by it)`,
    );
  return weight;
}

function checkMaxQueued(max: number | null): number | null {
  if (max !== null && (!Number.isSafeInteger(max) || max < 1 || max > MAX_QUEUED_LIMIT))
    throw new BadRequestError(
      `maxQueued ${max} must be a whole number from 1 to ${MAX_QUEUED_LIMIT.toLocaleString('en')}, or null`,
    );
  return max;
}

function checkTags(tags: string[]): string[] {
  for (const t of tags) {
    if (!TAG.test(t)) {
      throw new BadRequestError(
        `tag ${JSON.stringify(t)} must be 1-63 letters, digits, "-", "_", ".", ":" or "/"`,
      );
    }
  }
  return [...new Set(tags)];
}

async function requireQueueExists(db: Db, name: string): Promise<void> {
  if (!(await findClusterQueue(db, name))) {
    throw new UnprocessableError(`cluster queue "${name}" does not exist (see: berth queue list)`);
  }
}

const event = (project: string, type: string, message: string, data?: unknown): EventInput => ({
  subjectKind: 'project',
  subject: project,
  project,
  type,
  message,
  data,
});

async function detail(db: Db, project: Project): Promise<ProjectDetail> {
  return {
    ...project,
    members: await listMembers(db, project.name),
    privileges: await listPrivileges(db, project.name),
  };
}

export async function createProject(
  ctx: ServiceContext,
  p: Principal,
  input: ProjectInput,
): Promise<ProjectDetail> {
  requireAdmin(p, 'create projects');
  return createProjectUnchecked(ctx, input, p);
}

/** For bootstrap too: without `by`, the audit says the server did it (`system`). */
export async function createProjectUnchecked(
  ctx: ServiceContext,
  input: ProjectInput,
  by?: Principal,
): Promise<ProjectDetail> {
  const fields = {
    name: checkDnsLabel('project name', input.name),
    description: input.description ?? '',
    tags: checkTags(input.tags ?? []),
    clusterQueue: input.clusterQueue,
    active: input.active ?? true,
    weight: checkWeight(input.weight ?? 1),
    maxQueued: checkMaxQueued(input.maxQueued ?? null),
  };
  return commitUnit(ctx, async (db, announce) => {
    if (await findProject(db, fields.name))
      throw new ConflictError(`project "${fields.name}" already exists`);
    await requireQueueExists(db, fields.clusterQueue);
    const now = ctx.now();
    await insertProject(db, fields, now);
    await appendEvent(
      db,
      event(
        fields.name,
        'created',
        `project ${fields.name} created on cluster queue ${fields.clusterQueue}`,
        fields,
      ),
      now,
    );
    await audit(
      db,
      by,
      { action: 'project.create', subject: fields.name, project: fields.name, detail: { ...fields } },
      now,
    );
    announce({ kind: 'project', project: fields.name });
    // Also when 1: a project made again under an old name must not inherit the old weight.
    announce({ kind: 'weight', project: fields.name, weight: fields.weight });
    return detail(db, (await findProject(db, fields.name))!);
  });
}

/** Tells the controller every project's weight other than the default (on start). */
export async function loadProjectWeights(
  ctx: ServiceContext,
  controller: Pick<ControllerCommands, 'setProjectWeight'>,
): Promise<void> {
  for (const project of await listProjects(ctx.store.db)) {
    if (project.weight !== 1) controller.setProjectWeight(project.name, project.weight);
  }
}

/** Admins see every project; everyone else the projects they are a member of. */
export async function listVisibleProjects(ctx: ServiceContext, p: Principal): Promise<ProjectView[]> {
  const user = requireUser(p);
  const projects = await listProjects(ctx.store.db, user.admin ? undefined : user.id);
  const counts = await jobCountsOf(ctx.store.db, user.admin ? undefined : projects.map((x) => x.name));
  return projects.map((x) => ({ ...x, jobCounts: counts.get(x.name) ?? noJobs() }));
}

/** The names of the projects whose jobs `p` may see, or 'all' (admins). */
export async function visibleProjectNames(ctx: ServiceContext, p: Principal): Promise<Set<string> | 'all'> {
  const user = requireUser(p);
  if (user.admin) return 'all';
  return new Set((await listProjects(ctx.store.db, user.id)).map((x) => x.name));
}

export async function getProject(
  ctx: ServiceContext,
  p: Principal,
  name: string,
): Promise<ProjectDetailView> {
  const db = ctx.store.db;
  const { project, role } = await requireProject(db, p, name, 'viewer', 'reading');
  const jobCounts = (await jobCountsOf(db, [name])).get(name) ?? noJobs();
  return { ...(await detail(db, project)), role, jobCounts };
}

export async function patchProject(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  patch: ProjectPatch,
): Promise<ProjectDetail> {
  return commitUnit(ctx, async (db, announce) => {
    const { project, role } = await requireProject(db, p, name, 'owner', 'changing a project');
    if (patch.clusterQueue !== undefined && patch.clusterQueue !== project.clusterQueue) {
      if (role !== 'admin')
        throw new ForbiddenError('only admins can move a project to another cluster queue');
      await requireQueueExists(db, patch.clusterQueue);
    }
    const weight = patch.weight === undefined ? project.weight : checkWeight(patch.weight);
    if (weight !== project.weight && role !== 'admin')
      throw new ForbiddenError("only admins can change a project's fair-share weight");
    const maxQueued = patch.maxQueued === undefined ? project.maxQueued : checkMaxQueued(patch.maxQueued);
    if (maxQueued !== project.maxQueued && role !== 'admin')
      throw new ForbiddenError("only admins can change a project's maxQueued");
    const next = {
      name,
      description: patch.description ?? project.description,
      tags: patch.tags ? checkTags(patch.tags) : project.tags,
      clusterQueue: patch.clusterQueue ?? project.clusterQueue,
      active: patch.active ?? project.active,
      weight,
      maxQueued,
    };
    const now = ctx.now();
    await updateProject(db, next, now);
    // Its queued jobs go along; admitted and running ones finish where they are.
    const moved = next.clusterQueue !== project.clusterQueue;
    if (moved) await moveQueuedJobs(db, name, next.clusterQueue);
    await appendEvent(db, event(name, 'updated', `project ${name} updated`, patch), now);
    await audit(db, p, { action: 'project.update', subject: name, project: name, detail: { ...patch } }, now);
    const result = await detail(db, (await findProject(db, name))!);
    announce({ kind: 'project', project: name });
    if (weight !== project.weight) announce({ kind: 'weight', project: name, weight });
    if (moved) announce(accessOf(result));
    return result;
  });
}

/** The name a deleted project's jobs are filed under: never a valid project name (`~`). */
const archiveName = (name: string, at: number): string => `${name}~deleted-${at}`;

/**
 * Deletes a project. One with unfinished jobs is refused (409) unless `cancelJobs`: then they are
 * cancelled, with a reason that says so, in the same transaction. Its jobs — finished or
 * stopping — are filed under an archive name, so that a new project of the same name starts
 * empty; admins still read them by id.
 */
export async function removeProject(
  ctx: ServiceContext,
  p: Principal,
  name: string,
  opts: { cancelJobs?: boolean } = {},
): Promise<void> {
  // Read as the job's reason: "cancelled by admin, deleting project NAME".
  const by = `${actorName(p)}, deleting project ${name}`;
  const reason = `cancelled by ${by}`;
  const now = ctx.now();
  const archivedAs = archiveName(name, now);
  await commitUnit(ctx, async (db, announce) => {
    await requireProject(db, p, name, 'owner', 'deleting a project');
    const ids = await unfinishedJobIds(db, name);
    if (ids.length > 0 && !opts.cancelJobs) {
      const some = ids.slice(0, 5).join(', ') + (ids.length > 5 ? ', …' : '');
      throw new ConflictError(
        `project "${name}" has ${ids.length} unfinished job${ids.length > 1 ? 's' : ''} (${some}); ` +
          `cancel them first, or delete with cancelJobs=true (berth project delete ${name} --cancel-jobs)`,
      );
    }
    await archiveProjectJobs(db, name, archivedAs);
    announce({ kind: 'project-deleted', project: name, archivedAs, jobIds: ids, by });
    announce({ kind: 'weight', project: name, weight: 1 });
    for (const id of ids) {
      await updateJob(db, id, { cancelRequested: true });
      await appendEvent(
        db,
        {
          subjectKind: 'job',
          subject: String(id),
          project: archivedAs,
          jobId: id,
          type: 'cancel-requested',
          message: reason,
        },
        now,
      );
    }
    await deleteProject(db, name);
    // The deletion itself stays under the name: what happened to NAME is found there.
    await appendEvent(db, event(name, 'deleted', `project ${name} deleted`, { archivedAs }), now);
    await audit(
      db,
      p,
      {
        action: 'project.delete',
        subject: name,
        project: name,
        detail: { archivedAs, cancelledJobs: ids.length },
      },
      now,
    );
  });
}

async function requireUserNamed(db: Db, name: string) {
  const user = await findUserByName(db, name);
  if (!user) throw new NotFoundError(`user "${name}" not found`);
  return user;
}

export async function setMember(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  userName: string,
  role: Role,
): Promise<ProjectDetail> {
  if (!ROLES.includes(role)) throw new BadRequestError(`role must be one of ${ROLES.join(', ')}`);
  return commitUnit(ctx, async (db, announce) => {
    const { project: proj } = await requireProject(db, p, project, 'owner', 'managing members');
    const user = await requireUserNamed(db, userName);
    await upsertMember(db, project, user.id, role);
    const now = ctx.now();
    await appendEvent(
      db,
      event(project, 'member-set', `${userName} is now ${role} of ${project}`, { user: userName, role }),
      now,
    );
    await audit(db, p, { action: 'member.set', subject: userName, project, detail: { role } }, now);
    announce({ kind: 'project', project }); // who may see its jobs changed
    return detail(db, proj);
  });
}

export async function removeMember(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  userName: string,
): Promise<ProjectDetail> {
  return commitUnit(ctx, async (db, announce) => {
    const { project: proj } = await requireProject(db, p, project, 'owner', 'managing members');
    const user = await requireUserNamed(db, userName);
    if (!(await deleteMember(db, project, user.id))) {
      throw new NotFoundError(`user "${userName}" is not a member of project "${project}"`);
    }
    const now = ctx.now();
    await appendEvent(
      db,
      event(project, 'member-removed', `${userName} removed from ${project}`, { user: userName }),
      now,
    );
    await audit(db, p, { action: 'member.remove', subject: userName, project }, now);
    announce({ kind: 'project', project }); // who may see its jobs changed
    return detail(db, proj);
  });
}

export async function grantPrivilege(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  privilege: string,
): Promise<ProjectDetail> {
  requireAdmin(p, 'grant privileges');
  checkName(PRIVILEGE, PRIVILEGE_HELP, 'privilege', privilege);
  return commitUnit(ctx, async (db, announce) => {
    const { project: proj } = await requireProject(db, p, project, 'owner', 'granting privileges');
    if (await insertPrivilege(db, project, privilege)) {
      const now = ctx.now();
      await appendEvent(
        db,
        event(project, 'privilege-granted', `privilege ${privilege} granted to ${project}`),
        now,
      );
      await audit(db, p, { action: 'privilege.grant', subject: privilege, project }, now);
    }
    const result = await detail(db, proj);
    announce(accessOf(result));
    return result;
  });
}

/**
 * Where a project's queued jobs now queue and what they may use, for the controller: they follow
 * a move, and wait while a privilege they need is revoked (controller/project-gates.ts).
 */
const accessOf = ({ name, clusterQueue, privileges }: ProjectDetail): Notice => ({
  kind: 'access',
  access: { name, clusterQueue, privileges },
});

export async function revokePrivilege(
  ctx: ServiceContext,
  p: Principal,
  project: string,
  privilege: string,
): Promise<ProjectDetail> {
  requireAdmin(p, 'revoke privileges');
  return commitUnit(ctx, async (db, announce) => {
    const { project: proj } = await requireProject(db, p, project, 'owner', 'revoking privileges');
    if (!(await deletePrivilege(db, project, privilege))) {
      throw new NotFoundError(`project "${project}" does not hold privilege "${privilege}"`);
    }
    const now = ctx.now();
    await appendEvent(
      db,
      event(project, 'privilege-revoked', `privilege ${privilege} revoked from ${project}`),
      now,
    );
    await audit(db, p, { action: 'privilege.revoke', subject: privilege, project }, now);
    const result = await detail(db, proj);
    announce(accessOf(result));
    return result;
  });
}
