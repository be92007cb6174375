/** What a job waiting for its image's pull is told (its reason), from the pull's progress. */
import type { PullProgress } from './image-cache.js';

/** "pulling image 127.0.0.1:5000/team/app:1: 120 of 800 MB", then "unpacking image … (800 MB)". */
export function pullReason(name: string, p: PullProgress): string {
  const mb = (n: number) => (n / 1e6).toFixed(n < 10e6 ? 1 : 0);
  // The layout holds a little more than the blobs (its index): never more than all, said.
  const bytes = p.total === undefined ? p.bytes : Math.min(p.bytes, p.total);
  if (p.phase === 'unpacking') return `unpacking image ${name} (${mb(p.total ?? bytes)} MB)`;
  return p.total === undefined
    ? `pulling image ${name}: ${mb(bytes)} MB so far`
    : `pulling image ${name}: ${mb(bytes)} of ${mb(p.total)} MB`;
}
