/** Durations as people read them (parsing them is the domain's: domain/duration.ts). */

import { DURATION_UNITS as UNITS, parseDuration } from '../domain/duration.js';

export { parseDuration };

/**
 * A time span in its largest units: `42s`, `5m`, `2h`, `4d` with `parts` 1 (ages), `5m3s`, `2h5m`
 * with `parts` 2 (durations). Negative spans (clock skew) count as zero.
 */
export function formatSpan(ms: number, parts: 1 | 2 = 1): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const largest = UNITS.findIndex(([, seconds]) => total >= seconds);
  const first = largest < 0 ? UNITS.length - 1 : largest;
  return UNITS.slice(first, first + parts)
    .map(([unit, seconds], k) => {
      const within = k === 0 ? total : total % UNITS[first + k - 1]![1];
      return `${Math.floor(within / seconds)}${unit}`;
    })
    .join('');
}

/** Milliseconds from `from` to `to` (now when null); undefined when `from` is null. */
export function span(from: string | null, to: string | null, now = Date.now()): number | undefined {
  if (from === null) return undefined;
  return (to === null ? now : Date.parse(to)) - Date.parse(from);
}
