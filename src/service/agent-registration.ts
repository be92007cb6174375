/**
 * An agent on another machine (`berth agent`, started by a factory such as slurm's) begins with a
 * one-time credential that can do nothing but register its one worker. Registering spends the
 * credential and hands out a token for the worker's job, as the local factory's agents get at
 * their start; the token dies with the job, so nothing the agent holds outlives its worker.
 * Only the credential's hash is kept, on the worker's record.
 */
import { UnauthorizedError } from '../domain/errors.js';
import { isTerminal } from '../domain/job.js';
import { hashToken, newToken } from '../domain/tokens.js';
import { findJobState } from '../store/queries/jobs.js';
import { insertToken } from '../store/queries/tokens.js';
import { spendRegistration } from '../store/queries/workers.js';
import type { ServiceContext } from './context.js';

export interface Registration {
  workerId: number;
  jobId: number;
  /** The job's token: what the agent speaks the agent protocol with. */
  token: string;
}

export async function registerAgent(
  ctx: ServiceContext,
  workerId: number,
  credential: string,
): Promise<Registration> {
  // One answer for every refusal: a caller must not learn which workers exist.
  const refused = new UnauthorizedError(
    `worker ${workerId} cannot be registered with this credential (unknown, already used, or the worker is gone)`,
  );
  return ctx.store.transaction(async (db) => {
    const jobId = await spendRegistration(db, workerId, hashToken(credential), ctx.now());
    if (jobId === undefined) throw refused;
    const state = await findJobState(db, jobId);
    if (state === undefined || isTerminal(state)) throw refused;
    const token = newToken('job');
    await insertToken(
      db,
      {
        hash: hashToken(token),
        userId: null,
        jobId,
        label: `job ${jobId} (worker ${workerId})`,
        expiresAt: null,
      },
      ctx.now(),
    );
    return { workerId, jobId, token };
  });
}
