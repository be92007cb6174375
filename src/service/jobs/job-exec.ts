/**
 * `berth exec`: a command run inside a running job (agent/exec-process.ts), and `berth
 * port-forward`: a connection to a port inside it, with the same rights. Only people may: the
 * job's submitter (still a member of its project) and the project's owners, and server admins —
 * never a job or project token (a job's code must not reach into another job of its project),
 * never a viewer. Every session is in the audit log, and so is every refusal of a caller who may
 * see the job; the command itself is not (it may hold a secret): its program and argument count.
 */
import { basename } from 'node:path';
import {
  BadRequestError,
  BerthError,
  ConflictError,
  ForbiddenError,
  UnavailableError,
} from '../../domain/errors.js';
import type { Principal } from '../../domain/user.js';
import type { ExecRun, ExecSession, TerminalSize } from '../../controller/port.js';
import type { AuditAction } from '../../domain/audit.js';

export type { ExecSession, TerminalSize };
import { roleAtLeast } from '../../domain/roles.js';
import { findRole } from '../../store/queries/projects.js';
import type { With } from '../context.js';
import { audit } from '../tenancy/audit.js';
import { visibleJob } from './jobs.js';

/** The longest command line an exec takes (as the job's own, `api/job-schemas.ts`). */
const MAX_ARGS = 4096;

/**
 * Checks that `p` may run `run` inside member `rank` of job `jobId`, and that it would start now
 * (an audit row either way); resolves with what starts it.
 */
export async function openExec(
  ctx: With<'runtime'>,
  p: Principal,
  jobId: number,
  run: ExecRun,
  rank: number,
  /**
   * Whether the request will become the session (a WebSocket's upgrade): only then is it audited.
   * A plain GET of the same path is a dashboard asking why its upgrade was refused (a browser does
   * not say): answered alike, but no second row for one attempt.
   */
  audited = true,
): Promise<() => ExecSession> {
  if ('command' in run) {
    const { command } = run;
    if (command.length === 0 || command[0] === '')
      throw new BadRequestError('command: give the command to run inside the job (berth exec JOB -- CMD …)');
    if (command.length > MAX_ARGS) throw new BadRequestError(`command: more than ${MAX_ARGS} arguments`);
  } else if ('forward' in run && (!Number.isInteger(run.forward) || run.forward < 1 || run.forward > 65_535))
    throw new BadRequestError(`port: ${run.forward} is not a TCP port (1 to 65535)`);
  // Not found for whoever may not see it, as every job endpoint answers.
  const job = await visibleJob(ctx, p, jobId);
  const detail =
    'command' in run
      ? {
          rank,
          program: basename(run.command[0]!),
          args: run.command.length - 1,
          ...(run.tty ? { tty: true } : {}),
        }
      : 'forward' in run
        ? { rank, port: run.forward }
        : { rank };
  const record = async (action: AuditAction, why?: string): Promise<void> => {
    if (!audited) return;
    await ctx.store.transaction((db) =>
      audit(
        db,
        p,
        { action, subject: String(jobId), project: job.project, detail: why ? { ...detail, why } : detail },
        ctx.now(),
      ),
    );
  };
  try {
    await mayExec(ctx, p, job);
    if ('attach' in run && !job.spec.interactive)
      throw new ConflictError(
        `job ${jobId} is not interactive: it has no terminal to attach to (berth exec ${jobId} -it -- sh runs a shell inside it; berth logs -f ${jobId} follows its output)`,
      );
    ctx.runtime.controller.checkExec(jobId, rank);
    await record('command' in run ? 'job.exec' : 'forward' in run ? 'job.port-forward' : 'job.attach');
    // Started once its connection is there (the WebSocket's upgrade): nothing runs for a client
    // that went away before. The job may have ended meanwhile: a ConflictError then, as now.
    return () => ctx.runtime.controller.execInJob(jobId, rank, run);
  } catch (e) {
    // Refused for what the caller may change (not a replica that is not the leader: no audit row).
    if (e instanceof BerthError && !(e instanceof UnavailableError))
      await record('job.exec-refused', e.message);
    throw e;
  }
}

/** Whether `p` may run a command inside `job`: a ForbiddenError saying why not. */
async function mayExec(
  ctx: With<'runtime'>,
  p: Principal,
  job: { project: string; createdBy: string },
): Promise<void> {
  if (p.kind !== 'user')
    throw new ForbiddenError(
      "a command inside a job is run for a person's token only: not a job's or a project's token",
    );
  if (p.user.admin) return;
  const role = await findRole(ctx.store.db, job.project, p.user.id);
  if (roleAtLeast(role, 'owner')) return;
  if (job.createdBy === p.user.name && roleAtLeast(role, 'member')) return;
  throw new ForbiddenError(
    `a command inside a job of project "${job.project}" is for the job's submitter (${job.createdBy}) and the project's owners; you are a ${role ?? 'non-member'}`,
  );
}
