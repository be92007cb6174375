/** Jobs per project and state: read from `job_counts`, which triggers on `jobs` keep exact. */
import { JOB_STATES, type JobState } from '../../domain/job.js';
import type { JobCounts } from '../../domain/project.js';
import type { Db } from '../store.js';

export const noJobs = (): JobCounts => Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as JobCounts;

/** The counts of each of `projects` (every project when absent); a project with no jobs is absent. */
export async function jobCountsOf(db: Db, projects?: string[]): Promise<Map<string, JobCounts>> {
  if (projects?.length === 0) return new Map();
  let query = db.selectFrom('job_counts').select(['project', 'state', 'n']);
  if (projects) query = query.where('project', 'in', projects);
  const out = new Map<string, JobCounts>();
  for (const r of await query.execute()) {
    let counts = out.get(r.project);
    if (!counts) out.set(r.project, (counts = noJobs()));
    if ((JOB_STATES as readonly string[]).includes(r.state)) counts[r.state as JobState] = Number(r.n);
  }
  return out;
}

/** How many of a project's jobs are in `states` (in any state when absent or empty). */
export async function countJobs(db: Db, project: string, states?: JobState[]): Promise<number> {
  const counts = (await jobCountsOf(db, [project])).get(project) ?? noJobs();
  const wanted = states && states.length > 0 ? new Set(states) : JOB_STATES;
  let n = 0;
  for (const s of wanted) n += counts[s];
  return n;
}
