/**
 * The leader's side of the control messages (messages.ts): each is checked against the store
 * before its controller acts, so a duplicate, one about a change that was rolled back, or one the
 * leader already acted on (its own submissions reach it directly too) changes nothing.
 */
import { queuedArrayTaskIds, unfinishedArrayTaskIds } from '../store/queries/job-arrays.js';
import { cancelEach, cancelTasks } from '../service/jobs/job-arrays.js';
import type { ControllerCommands, ControllerReadModel } from '../controller/port.js';
import { isTerminal } from '../domain/job.js';
import { findClusterQueue, listClusterQueues } from '../store/queries/cluster-queues.js';
import { findJob, findJobs, loadActiveJobs, unfinishedJobIds } from '../store/queries/jobs.js';
import { findProject, listAllPrivileges, listPrivileges, listProjects } from '../store/queries/projects.js';
import type { Db } from '../store/store.js';
import type { ControlMessage } from './messages.js';

/** Submitted jobs the controller does not track yet: read in one query, and taken up oldest first. */
/** `list` in pieces of at most `size`. */
function chunks<T>(list: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += size) out.push(list.slice(i, i + size));
  return out;
}

export async function applySubmitted(
  db: Db,
  controller: ControllerCommands & ControllerReadModel,
  ids: number[],
): Promise<void> {
  const unknown = ids.filter((id) => !controller.isActive(id));
  if (unknown.length === 0) return;
  const jobs = (await findJobs(db, unknown)).sort((a, b) => a.id - b.id);
  // Only a job nobody has taken up yet: queued, never admitted, not cleaned up.
  for (const job of jobs)
    if (job.state === 'queued' && !job.cleanedUp && !controller.isActive(job.id))
      await controller.jobSubmitted(job);
}

export async function applyControl(
  db: Db,
  controller: ControllerCommands & ControllerReadModel,
  m: ControlMessage,
): Promise<void> {
  switch (m.kind) {
    case 'submitted':
      return applySubmitted(db, controller, [m.id]);
    case 'array-cancel':
      return cancelTasks(controller, await unfinishedArrayTaskIds(db, m.id), m.by);
    case 'array-submitted':
      // Its tasks in pages: an array may have 100,000, more than one query may name.
      for (const page of chunks(await queuedArrayTaskIds(db, m.id), 1000))
        await applySubmitted(db, controller, page);
      return;
    case 'cancel': {
      const job = await findJob(db, m.id);
      if (job && !isTerminal(job.state) && controller.isActive(m.id)) await controller.cancel(m.id, m.by);
      return;
    }
    case 'queue':
      controller.queueChanged(m.name, await findClusterQueue(db, m.name));
      return;
    case 'weight':
      controller.setProjectWeight(m.project, (await findProject(db, m.project))?.weight ?? 1);
      return;
    case 'project': {
      const project = await findProject(db, m.project);
      if (!project) return;
      const privileges = await listPrivileges(db, project.name);
      await controller.projectsChanged([
        { name: project.name, clusterQueue: project.clusterQueue, privileges },
      ]);
      return;
    }
    case 'project-deleted': {
      const ids = await unfinishedJobIds(db, m.archivedAs);
      controller.projectDeleted(m.project, m.archivedAs, ids);
      // Its jobs cancelled in the order they were submitted; an older replica sent a cancel each.
      if (m.by !== undefined) await cancelEach(controller, ids, m.by);
      return;
    }
  }
}

/**
 * Brings a leader's controller up to date with the store after it may have missed control
 * messages: every queue definition and project weight, and — after the bus was away (`jobs`) —
 * jobs submitted that it does not track and cancels it has not acted on. (Right after the rebuild
 * on start, the jobs are up to date: the rebuild read them after the messages began to be kept.)
 */
export async function catchUp(
  db: Db,
  controller: ControllerCommands & ControllerReadModel,
  jobs: boolean,
): Promise<void> {
  for (const job of jobs ? await loadActiveJobs(db) : []) {
    if (job.state === 'queued' && !job.cleanedUp && !controller.isActive(job.id))
      await controller.jobSubmitted(job);
    else if (job.cancelRequested && !isTerminal(job.state) && controller.isActive(job.id))
      await controller.cancel(job.id, 'a request made while the scheduler was away').catch(() => {});
  }
  const queues = await listClusterQueues(db);
  const names = new Set(queues.map((q) => q.name));
  for (const q of queues) controller.queueChanged(q.name, q);
  for (const { name } of [...controller.queueModels()])
    if (!names.has(name)) controller.queueChanged(name, undefined);
  const privileges = new Map<string, string[]>();
  for (const { project, privilege } of await listAllPrivileges(db))
    privileges.set(project, [...(privileges.get(project) ?? []), privilege]);
  const projects = await listProjects(db);
  for (const p of projects) controller.setProjectWeight(p.name, p.weight);
  await controller.projectsChanged(
    projects.map((p) => ({
      name: p.name,
      clusterQueue: p.clusterQueue,
      privileges: privileges.get(p.name) ?? [],
    })),
  );
}
