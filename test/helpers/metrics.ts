/**
 * A server's Prometheus text as samples: what the metrics tests compare before and after real
 * actions.
 */
import { call } from './server.js';

/** Every sample of `text` as `name{labels}` → value. */
export function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** GET /metrics as the admin, its samples. */
export async function scrape(api: string, adminToken: string): Promise<Map<string, number>> {
  const res = await call<string>(api, adminToken, 'GET', '/metrics');
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status} ${res.text.slice(0, 200)}`);
  return samples(res.text);
}
