/**
 * An agent on another machine (`berth agent`, started by a factory such as slurm's) begins with a
 * one-time credential that can do nothing but register its one worker. Registering spends the
 * credential and hands out a token for the worker's job, as the local factory's agents get at
 * their start; the token dies with the job, so nothing the agent holds outlives its worker. A
 * pilot's agent (controller/pilots.ts) gets a worker credential instead of nothing, to ask for its
 * next jobs; it dies with the worker.
 * A gang's worker runs one agent per member, all with the same credential: it is good for that
 * many registrations, each handing out a token of its own.
 * Only the credential's hash is kept, on the worker's record.
 * A job in an OCI image has its image named in these answers (pinned), with its project's login to
 * the registry for the node's pull: answers to the worker's own credential, never to the job's
 * token, which the job's code holds too.
 */
import type { AgentImage, PilotNext } from '../../controller/port.js';
import { parseImageReference } from '../../images/reference.js';
import { registryAuth } from '../tenancy/registry-credentials.js';
import { channelCredential } from './agent-channel.js';
import { UnauthorizedError } from '../../domain/errors.js';
import { isTerminal } from '../../domain/job.js';
import { hashToken, newToken } from '../../domain/tokens.js';
import { findJob, findJobState } from '../../store/queries/jobs.js';
import { insertJobToken } from '../../store/queries/tokens.js';
import { hasCredential, spendRegistration, workerWithCredential } from '../../store/queries/workers.js';
import type { Db } from '../../store/store.js';
import type { ServiceContext, With } from '../context.js';

export interface Registration {
  workerId: number;
  jobId: number;
  /** The job's token: what the agent speaks the agent protocol with. */
  token: string;
  /**
   * A pilot's (a worker of a target with `reuse: true`) credential for its next jobs: it can do
   * nothing but ask for them (`nextJob`), and dies with the worker. Absent for other workers.
   */
  workerCredential?: string;
  /** The job's image, for the agent to pull on its node; absent: the job runs on the node's own files. */
  image?: AgentImage;
  /** The credential of the agent's channel to the server (agent-channel.ts), for `berth exec`. */
  channel: string;
}

/**
 * What a pilot's agent is told when it asks for its next job (agent/protocol.ts's NextJob): the
 * job with its token and, once it already runs, what to run; or ask again; or stop.
 */
export type NextJob =
  | (Extract<PilotNext, { jobId: number }> & { token: string; image?: AgentImage })
  | Exclude<PilotNext, { jobId: number }>;

export async function registerAgent(
  ctx: ServiceContext,
  workerId: number,
  credential: string,
): Promise<Registration> {
  // One answer for every refusal: a caller must not learn which workers exist.
  const refused = new UnauthorizedError(
    `worker ${workerId} cannot be registered with this credential (unknown, already used, or the worker is gone)`,
  );
  let workerCredential: string | undefined;
  // Before the transaction: its key is read (made at first) outside it.
  const channel = await channelCredential(ctx, workerId);
  return ctx.store.transaction(async (db) => {
    const spent = await spendRegistration(
      db,
      workerId,
      hashToken(credential),
      ctx.now(),
      async (target, jobId) => {
        if (!ctx.runtime?.targets[target]?.reuse) return null;
        // A gang's worker is one allocation for one job: never a pilot.
        if (((await findJob(db, jobId))?.spec.workers ?? 1) > 1) return null;
        workerCredential = newToken('agent');
        return hashToken(workerCredential);
      },
    );
    if (spent === undefined) throw refused;
    const token = await jobToken(db, ctx, workerId, spent.jobId);
    if (token === undefined) throw refused;
    const image = await agentImage(db, ctx, spent.jobId);
    return {
      workerId,
      jobId: spent.jobId,
      token,
      channel,
      ...(workerCredential ? { workerCredential } : {}),
      ...(image ? { image } : {}),
    };
  });
}

/** The image job `jobId` runs in, as its agent pulls it; undefined when it names none. */
async function agentImage(db: Db, ctx: ServiceContext, jobId: number): Promise<AgentImage | undefined> {
  const job = await findJob(db, jobId);
  const reference = job?.spec.image;
  if (!job || !reference) return undefined;
  const { registry } = parseImageReference(reference);
  const login = await registryAuth(db, ctx.secrets, job.project, registry);
  return {
    reference,
    ...(ctx.runtime?.insecureRegistries?.includes(registry) ? { insecure: true } : {}),
    ...(login ? { login } : {}),
  };
}

/**
 * A pilot's agent asks for its next job with its worker credential: long-polled by the leader's
 * controller for up to `waitMs`; a job handed over comes with its own token.
 */
export async function nextJob(
  ctx: With<'runtime'>,
  workerId: number,
  credential: string,
  waitMs: number,
): Promise<NextJob> {
  if (!(await hasCredential(ctx.store.db, workerId, hashToken(credential))))
    throw new UnauthorizedError(`worker ${workerId} has no such credential (or is gone)`);
  return pilotJob(ctx, workerId, waitMs);
}

/**
 * The next job of pilot `workerId`, long-polled up to `waitMs`: asked with its worker credential
 * (`nextJob`), or by its agent as it reports its last job's end, with that job's token.
 */
export async function pilotJob(ctx: With<'runtime'>, workerId: number, waitMs: number): Promise<NextJob> {
  const next = await ctx.runtime.controller.pilotNext(workerId, waitMs);
  if (!('jobId' in next)) return next;
  const image = await agentImage(ctx.store.db, ctx, next.jobId);
  const withImage = image ? { image } : {};
  if (next.token)
    return {
      jobId: next.jobId,
      token: next.token,
      ...(next.start ? { start: next.start } : {}),
      ...withImage,
    };
  // Handed over before a restart: its token is made now.
  const token = await ctx.store.transaction((db) => jobToken(db, ctx, workerId, next.jobId));
  return token === undefined
    ? { stop: `job ${next.jobId} has ended` }
    : { jobId: next.jobId, token, ...withImage };
}

/** The header of a pilot's worker credential on a finish that asks for the next job (as agent/protocol.ts names it). */
export const WORKER_CREDENTIAL_HEADER = 'berth-worker-credential';

/**
 * The pilot that runs job `jobId` and holds `credential`: what a finish that asks for the next job
 * must show (the job's token is the job's code's too; the worker credential only its agent's).
 */
export async function pilotOfJob(
  ctx: ServiceContext,
  jobId: number,
  credential: string | undefined,
): Promise<number> {
  const workerId = credential
    ? await workerWithCredential(ctx.store.db, jobId, hashToken(credential))
    : undefined;
  if (workerId === undefined)
    throw new UnauthorizedError(
      `the next job goes only to the agent of job ${jobId}'s pilot worker: its worker credential is missing or wrong`,
    );
  return workerId;
}

/** A new token for job `jobId` on worker `workerId`; undefined once the job has ended. */
async function jobToken(
  db: Db,
  ctx: ServiceContext,
  workerId: number,
  jobId: number,
): Promise<string | undefined> {
  const state = await findJobState(db, jobId);
  if (state === undefined || isTerminal(state)) return undefined;
  const token = newToken('job');
  await insertJobToken(db, token, jobId, `job ${jobId} (worker ${workerId})`, ctx.now());
  return token;
}
