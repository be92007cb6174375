/**
 * Why a pending workload of a Backfill queue waits, in words (`reason`, berth status) and as a
 * `reservation` blocker (the dashboard): the reservation it holds, or the one it would delay.
 */
import { formatAmount } from '../domain/quantity.js';
import { blockerAmong, passes, type BackfillPlan } from './backfill.js';
import type { QueueState } from './queue-state.js';
import type { Blocker, Explanation } from './types.js';
import type { WorkloadNode } from './workload-node.js';

/**
 * Given the queue's reservations `p`: a workload that holds one says when it is reserved to start;
 * one that fits now says whose start it would delay. Anything else (it does not fit, the queue
 * holds) is said as in any queue.
 */
export function explainBackfill(
  e: Explanation,
  q: QueueState,
  n: WorkloadNode,
  p: BackfillPlan,
): Explanation {
  const later = p.more.find((r) => r.head === n);
  if (later !== undefined) return reserved(e, q, n, later.gate.start);
  if (p.start === Infinity) return e;
  if (p.head === n) return reserved(e, q, n, p.start);
  if (e.blockers.some((b) => b.kind !== 'ahead')) return e;
  const [planned, guard] = p.gates;
  const b = p.gates.every((g) => passes(q, g, n, p.at)) ? blockerAmong(q, p, n, p.at) : undefined;
  if (b !== undefined && b !== null && b.gate.start !== Infinity)
    return waiting(e, q, b.head, b.gate.start, 'this job would still hold its quota then');
  const held =
    guard !== undefined && planned !== undefined && passes(q, planned, n, p.at) && !passes(q, guard, n, p.at)
      ? `predicted to end before then, this job could by its timeout still hold its quota after ${new Date(guard.start).toISOString()}`
      : 'this job would still hold its quota then';
  return waiting(e, q, p.head, p.start, held);
}

/** What of the queue's limited resources `n` asks for, as text (`{cpu: '4'}`). */
function needsOf(q: QueueState, n: WorkloadNode): Record<string, string> {
  const l = q.limits;
  const out: Record<string, string> = {};
  l.idx.forEach((i, j) => {
    const r = l.names[j] ?? '';
    const x = n.req[i] ?? 0;
    if (x > 0) out[r] = formatAmount(r, x);
  });
  return out;
}

/** The reservation of `head` at `start`, as a blocker. */
function reservation(q: QueueState, head: WorkloadNode, start: number): Blocker {
  const requests = needsOf(q, head);
  return {
    kind: 'reservation',
    queue: q.name,
    job: head.id,
    startAt: new Date(start).toISOString(),
    requests,
  };
}

/** `n` holds a reservation at `start`: says when, and what of the queue it is for. */
function reserved(e: Explanation, q: QueueState, n: WorkloadNode, start: number): Explanation {
  if (start === Infinity) return e;
  const needs = Object.entries(needsOf(q, n))
    .map(([r, x]) => `${r} ${x}`)
    .join(', ');
  return {
    ...e,
    reason: `reserved to start at ${new Date(start).toISOString()}: ${needs} of queue ${q.name}, when the jobs running are expected to end (backfill); position ${e.position}`,
    blockers: [...e.blockers, reservation(q, n, start)],
  };
}

/** A workload that fits now waits for `head`'s reservation at `start`, for the reason `held`. */
function waiting(
  e: Explanation,
  q: QueueState,
  head: WorkloadNode,
  start: number,
  held: string,
): Explanation {
  return {
    ...e,
    reason: `waiting for job ${head.id}, reserved to start at ${new Date(start).toISOString()}: ${held} (backfill); position ${e.position}`,
    blockers: [...e.blockers, reservation(q, head, start)],
  };
}
