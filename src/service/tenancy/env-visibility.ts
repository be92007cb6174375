/**
 * Who may read the values of a job's `env`. Any project member can submit anything and a
 * viewer can read every job of the project, but env values are where secrets are passed (an API
 * key, a password), so they are shown only to the job's submitter and to admins — and to the job
 * itself (its job token), which runs with them anyway. Everyone else, project tokens included
 * (they are handed to job code and may leak with its output), sees the names with the values
 * masked: which variables a job sets is no secret, and the audit log keeps the names too.
 */
import type { JobRecord } from '../../domain/job.js';
import type { Principal } from '../../domain/user.js';

/** What a masked value reads as. */
export const MASKED_ENV_VALUE = '***';

export function mayReadEnvValues(p: Principal, job: Pick<JobRecord, 'id' | 'createdBy'>): boolean {
  if (p.kind === 'job') return p.jobId === job.id;
  if (p.kind !== 'user') return false;
  return p.user.admin || p.user.name === job.createdBy;
}

/** The job's env as `p` may see it: the values, or the names with masked values. */
export function envFor(
  p: Principal,
  job: Pick<JobRecord, 'id' | 'createdBy'> & { spec: { env: Record<string, string> } },
): Record<string, string> {
  if (mayReadEnvValues(p, job)) return job.spec.env;
  return Object.fromEntries(Object.keys(job.spec.env).map((name) => [name, MASKED_ENV_VALUE]));
}
