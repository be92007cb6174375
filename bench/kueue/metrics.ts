/** The server's scheduler-pass summary from `GET /api/v1/metrics` (Prometheus text), if it has one. */
import { getText } from './http.js';

const METRIC = 'berth_scheduler_pass_seconds';

/** `quantile` of summary `name` in Prometheus text exposition, in seconds; null if absent. */
export function summaryQuantile(text: string, name: string, quantile: string): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const m = /^[^{]+\{([^}]*)\}\s+(\S+)/.exec(line);
    if (!m?.[1] || m[2] === undefined) continue;
    const labels = m[1].split(',').map((l) => l.trim());
    if (!labels.includes(`quantile="${quantile}"`)) continue;
    const v = Number(m[2]);
    return Number.isFinite(v) ? v : null;
  }
  return null;
}

/** p99 of one scheduling pass in ms, or null when the server does not publish it. */
export async function schedulerPassP99Ms(api: string, token: string): Promise<number | null> {
  const r = await getText(api, token, '/metrics');
  if (r.status !== 200) return null;
  const s = summaryQuantile(r.text, METRIC, '0.99');
  return s === null ? null : s * 1000;
}
