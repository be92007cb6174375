/** The scenario's cluster queues, and one project per queue (as Kueue has a namespace per queue). */
import { pool, post } from '../lib.js';
import type { ExpandedScenario } from '../../src/simulate/scenario.js';

export async function createQueues(api: string, token: string, plan: ExpandedScenario): Promise<void> {
  const r = plan.resource;
  await pool(plan.queues.length, 16, async (i) => {
    const q = plan.queues[i]!;
    await post(api, token, '/cluster-queues', {
      name: q.name,
      cohort: q.cohort,
      // No quota on `jobs`: the implicit `jobs: 1` of every workload is then unlimited.
      quota: { [r]: String(q.nominal) },
      ...(q.borrowingLimit === null ? {} : { borrowingLimit: { [r]: String(q.borrowingLimit) } }),
      preemption: { reclaimWithinCohort: q.reclaimWithinCohort, withinClusterQueue: q.withinClusterQueue },
    });
    await post(api, token, '/projects', { name: q.name, clusterQueue: q.name });
  });
}
