import { setTimeout as delay } from 'node:timers/promises';

/**
 * Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`.
 * The default is long: it bounds a wait only when something is wrong, and CI runs four test runs
 * side by side on two cores, where a job a quiet machine ends in 2 s may take 30.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`,
      );
    }
    await delay(25);
  }
}
