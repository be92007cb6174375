/** Why a pending workload waits, in one line a user understands plus structured blockers. */
import { formatAmount } from '../domain/quantity.js';
import { countAhead, servedAt, tagOf, type SimKey } from './fair-share.js';
import { rank } from './lane-tree.js';
import type { WorkloadNode } from './workload-node.js';
import { room } from './quota.js';
import type { QueueState } from './queue-state.js';
import type { Blocker, Explanation } from './types.js';

const jobs = (n: number): string => (n === 1 ? '1 job' : `${n} jobs`);

/** What is short for `n` in `q` right now, resource by resource. */
export function quotaBlockers(q: QueueState, n: WorkloadNode): Blocker[] {
  const out: Blocker[] = [];
  const l = q.limits;
  for (let j = 0; j < l.idx.length; j++) {
    const i = l.idx[j] ?? 0;
    const x = n.req[i] ?? 0;
    const available = room(q, j);
    if (x <= 0 || x <= available) continue;
    const resource = l.names[j] ?? '';
    const used = q.usage[i] ?? 0;
    const limit = l.cap[j] ?? 0;
    if (q.cohort === null || x > limit - used) {
      out.push({
        kind: 'quota',
        queue: q.name,
        resource,
        requested: x,
        available: Math.max(0, available),
        used,
        limit,
      });
    } else {
      out.push({
        kind: 'cohort',
        cohort: q.cohort.name,
        resource,
        requested: x,
        available: Math.max(0, available),
      });
    }
  }
  return out;
}

function quotaReason(q: QueueState, blockers: Blocker[], position: number): string | null {
  const own: string[] = [];
  const shared: string[] = [];
  let cohort = '';
  for (const b of blockers) {
    if (b.kind === 'quota') {
      const f = (x: number): string => formatAmount(b.resource, x);
      own.push(`${b.resource} ${f(b.used)}/${f(b.limit)} in use, needs ${f(b.requested)}`);
    } else if (b.kind === 'cohort') {
      const f = (x: number): string => formatAmount(b.resource, x);
      cohort = b.cohort;
      shared.push(`${b.resource}: needs ${f(b.requested)}, ${f(b.available)} free`);
    }
  }
  if (own.length > 0) return `waiting for quota in queue ${q.name}: ${own.join(', ')}; position ${position}`;
  if (shared.length === 1) {
    return `waiting for cohort ${cohort} to free ${shared[0] ?? ''}; position ${position}`;
  }
  if (shared.length > 1)
    return `waiting for cohort ${cohort} to free ${shared.join('; ')}; position ${position}`;
  return null;
}

export function explainPending(
  q: QueueState,
  n: WorkloadNode,
  position: number,
  projectPosition: number,
): Explanation {
  const base = { queue: q.name, position, projectPosition };
  const m = q.model;
  if (m === null) {
    return {
      ...base,
      reason: `queue ${q.name} does not exist`,
      blockers: [{ kind: 'queue-missing', queue: q.name }],
    };
  }
  if (m.stopPolicy !== 'None') {
    const reason =
      m.stopPolicy === 'Hold' ? `queue ${q.name} is on hold` : `queue ${q.name} is on hold and draining`;
    return { ...base, reason, blockers: [{ kind: 'hold', queue: q.name, stopPolicy: m.stopPolicy }] };
  }
  if (n.waitingFor !== null && n.waitingFor.size > 0) {
    const victims = [...n.waitingFor].sort((a, b) => a - b);
    return {
      ...base,
      reason: `waiting for ${jobs(victims.length)} it preempted to stop in queue ${q.name}`,
      blockers: [{ kind: 'preemption', victims }],
    };
  }
  // The queue admits nothing before its preemptor, whose request is reserved meanwhile.
  const blocker = q.preemptor;
  if (blocker !== null && blocker !== n && blocker.waitingFor !== null) {
    return {
      ...base,
      reason: `waiting for job ${blocker.id}, which preempted others, to be admitted first in queue ${q.name}; position ${position}`,
      blockers: [{ kind: 'preemption', victims: [...blocker.waitingFor].sort((a, b) => a - b) }],
    };
  }
  const blockers = quotaBlockers(q, n);
  const reason = quotaReason(q, blockers, position);
  if (reason !== null) return { ...base, reason, blockers };
  if (position > 1) {
    return {
      ...base,
      reason: `waiting for ${jobs(position - 1)} ahead in queue ${q.name}`,
      blockers: [{ kind: 'ahead', queue: q.name, jobsAhead: position - 1 }],
    };
  }
  return { ...base, reason: `next to be admitted in queue ${q.name}`, blockers: [] };
}

/**
 * Why pending workload `n` of queue `q` waits, with its place in the queue's admission order
 * (fair share among projects included) and among its own project's workloads.
 */
export function explainWorkload(
  q: QueueState,
  n: WorkloadNode,
  weightOf: (project: string) => number,
): Explanation | undefined {
  const lane = q.lanes.get(n.project);
  if (lane === undefined) return undefined;
  const own = rank(lane.root, n);
  let ahead = own;
  if (q.lanes.size > 1) {
    const key: SimKey = {
      tag: tagOf(lane, n, q.limits, weightOf(lane.project)),
      served: servedAt(lane, n, q.round),
    };
    for (const other of q.lanes.values()) {
      if (other === lane || other.root === null) continue;
      ahead += countAhead(other, q.limits, weightOf(other.project), q.round, n, key);
    }
  }
  return explainPending(q, n, ahead + 1, own + 1);
}
