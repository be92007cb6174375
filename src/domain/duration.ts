/** Durations as people write them: `90`, `90s`, `10m`, `1h30m`, `2d` → seconds. */

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
