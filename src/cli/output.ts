/**
 * Human-readable output: aligned tables and `key: value` blocks, text from jobs escaped
 * (domain/printable.ts). JSON output is the API's own.
 */
import { printable } from '../domain/printable.js';
import { personTime, timesForPerson, type TimeStyle } from '../domain/reason-times.js';

export { printable };

/**
 * A reason (or any text of the server's) for a person: escaped as `printable`, its instants in the
 * reader's zone and relative to `now` (domain/reason-times.ts). `-o json` prints the API's text.
 */
export const reasonText = (reason: string, now: number): string => timesForPerson(printable(reason), now);

/** An instant of the API's (ISO) for a person: `14:02 (5m ago)`, `Nov 24 09:15`; null stays null. */
export const timeText = (iso: string | null, now = Date.now(), style?: TimeStyle): string | null =>
  iso === null ? null : personTime(Date.parse(iso), now, style);

export type Cell = string | number | boolean | null | undefined;

/** Missing values show as `-`; an empty string stays empty (e.g. an unmarked CURRENT column). */
const text = (c: Cell): string => (c === null || c === undefined ? '-' : printable(String(c)));

/** The narrowest the last column of a table is cut to, however narrow the terminal. */
const MIN_LAST_COLUMN = 20;

/** Columns to fit output into: the terminal's, else $COLUMNS; undefined when output is not a terminal. */
export function outputWidth(): number | undefined {
  if (process.stdout.isTTY) return process.stdout.columns;
  const columns = Number(process.env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : undefined;
}

/** Cuts `s` to `width` characters, marking the cut with `…`. */
export const truncate = (s: string, width: number): string =>
  s.length <= width ? s : `${s.slice(0, Math.max(0, width - 1))}…`;

/**
 * Columns separated by at least two spaces; no trailing blanks. With `width`, the cells of the
 * last column (e.g. a REASON) are cut so that lines fit.
 */
export function table(headers: string[], rows: Cell[][], width?: number): string {
  const cells = [headers, ...rows.map((r) => r.map(text))];
  if (width !== undefined && headers.length > 0) {
    const last = headers.length - 1;
    const before = headers.slice(0, last).map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
    const room = Math.max(MIN_LAST_COLUMN, width - before.reduce((sum, w) => sum + w + 2, 0));
    for (const r of cells.slice(1)) r[last] = truncate(r[last] ?? '', room);
  }
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** `key: value` lines with the values aligned; a list value continues on indented lines. */
export function fields(entries: [string, Cell | string[]][]): string {
  const width = Math.max(...entries.map(([k]) => k.length)) + 2;
  return entries
    .map(([key, value]) => {
      const label = `${key}:`.padEnd(width);
      if (!Array.isArray(value)) return `${label}${value === '' ? '-' : text(value)}`;
      if (value.length === 0) return `${label}-`;
      return [`${key}:`, ...value.map((v) => `  ${printable(v)}`)].join('\n');
    })
    .join('\n');
}

/** `{cpu: "8", memory: "32Gi"}` → `cpu=8 memory=32Gi`; empty → `-`. */
export function quantities(map: Record<string, string | number> | undefined): string {
  const entries = Object.entries(map ?? {});
  return entries.length === 0 ? '-' : entries.map(([k, v]) => `${k}=${v}`).join(' ');
}

export const yesNo = (b: boolean): string => (b ? 'yes' : 'no');

export const json = (value: unknown): string => JSON.stringify(value, null, 2);
