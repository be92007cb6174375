/** Durations as people read them (parsing them is the domain's: domain/duration.ts). */

import { formatSpan, parseDuration } from '../domain/duration.js';

export { formatSpan, parseDuration };

/** Milliseconds from `from` to `to` (now when null); undefined when `from` is null. */
export function span(from: string | null, to: string | null, now = Date.now()): number | undefined {
  if (from === null) return undefined;
  return (to === null ? now : Date.parse(to)) - Date.parse(from);
}
