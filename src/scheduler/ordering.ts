/** The order of pending workloads within a queue: higher priority, then earlier creation, then lower id. */

export interface OrderKey {
  priority: number;
  createdAt: number;
  id: number;
}

/** Negative when `a` goes before `b` in admission order. */
export function compareKeys(a: OrderKey, b: OrderKey): number {
  if (a.priority !== b.priority) return a.priority > b.priority ? -1 : 1;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  if (a.id !== b.id) return a.id < b.id ? -1 : 1;
  return 0;
}

/** Of two thresholds, the one further down the order (so the one that lets more workloads through). */
export function laterKey(a: OrderKey | null, b: OrderKey): OrderKey {
  return a === null || compareKeys(b, a) > 0 ? b : a;
}
