/**
 * Reading a paged list of the API (`X-Next-Cursor`, as `GET /audit` and `GET /jobs/{id}/artifacts`
 * answer): page after page until the last, or until `max` items are in hand.
 */
import type { ApiClient, Query } from './client.js';

/** The largest page the API gives: fewer round trips for long lists. */
export const PAGE_SIZE = 1000;

export async function readPages<T>(
  client: ApiClient,
  path: string,
  query: Query = {},
  max = Infinity,
): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const res = await client.stream('GET', path, {
      timeoutMs: 30_000,
      query: { ...query, limit: Math.min(PAGE_SIZE, max - items.length), cursor },
    });
    items.push(...((await res.json()) as T[]));
    cursor = res.headers.get('x-next-cursor') ?? undefined;
  } while (cursor !== undefined && items.length < max);
  return items;
}
