/**
 * Runs `fn` over `items` with at most `limit` calls under way at once; rejects with the first
 * failure, once the calls under way have ended. Thousands of file operations started at once
 * (the retention sweep's removals) cost the event loop tens of milliseconds in one turn, to start
 * them and again as they complete together, and every request waits behind them.
 */
export async function forEachInParallel<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const lane = async () => {
    while (next < items.length && !failure) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure) throw failure.err;
}
