/**
 * Housekeeping the leader does now and then (the artifacts' and the retention sweeps): at start,
 * then every `everyMs`, on the leading replica only (alone on SQLite), one sweep at a time.
 */
import type { ServiceContext } from '../context.js';

/** How often a replica looks whether it leads, so that a new leader sweeps soon after its election. */
const LEADER_CHECK_MS = 60_000;

/**
 * Runs `sweep` at start and then every `everyMs` while this replica leads; a replica that becomes
 * the leader sweeps within a minute. Returns the stop, which waits for a sweep under way; a long
 * sweep looks at `stopped()` between its batches and ends early rather than hold the shutdown.
 */
export function scheduleLeaderSweeps(
  ctx: ServiceContext,
  sweep: (stopped: () => boolean) => Promise<unknown>,
  onError: (err: unknown) => void,
  everyMs: number,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  let last: number | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped || running || (ctx.cluster && ctx.cluster.role() !== 'leader')) return;
    if (last !== undefined && Date.now() - last < everyMs) return;
    last = Date.now();
    running = sweep(() => stopped)
      .then(() => undefined, onError)
      .finally(() => (running = undefined));
  };
  const first = setTimeout(tick, 0);
  const timer = setInterval(tick, Math.min(everyMs, LEADER_CHECK_MS));
  timer.unref();
  return async () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(timer);
    await running;
  };
}
