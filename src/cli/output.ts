/** Human-readable output: aligned tables and `key: value` blocks. JSON output is the API's own. */

export type Cell = string | number | boolean | null | undefined;

/** Missing values show as `-`; an empty string stays empty (e.g. an unmarked CURRENT column). */
const text = (c: Cell): string => (c === null || c === undefined ? '-' : String(c));

/** Columns separated by at least two spaces; no trailing blanks. */
export function table(headers: string[], rows: Cell[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(text))];
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
      return [`${key}:`, ...value.map((v) => `  ${v}`)].join('\n');
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
