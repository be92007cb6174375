/** Durations as people write them (`90`, `90s`, `10m`, `1h30m`, `2d` → seconds) and read them. */

export const DURATION_UNITS = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
] as const;

const DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/** `1h30m` → 5400; a bare number is seconds. Undefined when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+$/.test(t)) return Number(t);
  const match = DURATION.exec(t);
  if (!match || t === '') return undefined;
  return DURATION_UNITS.reduce((sum, [, seconds], i) => sum + Number(match[i + 1] ?? 0) * seconds, 0);
}

/**
 * A time span in its largest units: `42s`, `5m`, `2h`, `4d` with `parts` 1 (ages), `5m3s`, `2h5m`,
 * `1h` with `parts` 2 (durations). Negative spans (clock skew) count as zero.
 */
export function formatSpan(ms: number, parts: 1 | 2 = 1): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const largest = DURATION_UNITS.findIndex(([, seconds]) => total >= seconds);
  const first = largest < 0 ? DURATION_UNITS.length - 1 : largest;
  return DURATION_UNITS.slice(first, first + parts)
    .map(([unit, seconds], k) => {
      const within = k === 0 ? total : total % DURATION_UNITS[first + k - 1]![1];
      const n = Math.floor(within / seconds);
      // `1h`, not `1h0m`: a zero after the first part says nothing.
      return k > 0 && n === 0 ? '' : `${n}${unit}`;
    })
    .join('');
}
