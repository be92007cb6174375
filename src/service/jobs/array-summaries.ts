/** Arrays as one entry: their first task's view with how all of their tasks stand. */
import { arrayState, type ArraySummary } from '../../domain/job-array.js';
import type { Job, JobRecord, JobState } from '../../domain/job.js';
import { countArrayTasks } from '../../store/queries/job-arrays.js';
import type { Db } from '../../store/store.js';

/** Sets `array` on each view that is an array's first task (one query for the whole page). */
export async function withArraySummaries(db: Db, records: JobRecord[], views: Job[]): Promise<void> {
  const heads = records.map((r, i) => [r, views[i]!] as const).filter(([r]) => r.arrayId === r.id);
  const counts = await countArrayTasks(
    db,
    heads.map(([r]) => r.id),
  );
  for (const [r, view] of heads) view.array = summaryOf(r, counts.get(r.id)!);
}

export function summaryOf(head: JobRecord, counts: ArraySummary['counts']): ArraySummary {
  return {
    id: head.id,
    spec: head.spec.array ?? '',
    size: Object.values(counts).reduce((a, b) => a + b, 0),
    throttle: head.spec.arrayThrottle ?? null,
    counts,
    state: arrayState(counts),
  };
}

/** An array's tasks in `states` (all when absent or empty), from its counts by state. */
export async function countTasks(db: Db, arrayId: number, states: JobState[] | undefined): Promise<number> {
  const counts = (await countArrayTasks(db, [arrayId])).get(arrayId)!;
  const wanted = states && states.length > 0 ? states : (Object.keys(counts) as JobState[]);
  return wanted.reduce((sum, s) => sum + counts[s], 0);
}
