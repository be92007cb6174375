/** Formatting of durations, times, counts and resource quantities. */

/** "12s", "3m 4s", "2h 5m", "3d 4h": two units at most, the larger first. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m}m ${s % 60}s` : `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h}h ${m % 60}m` : `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d}d ${h % 24}h` : `${d}d`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const clockTime = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/** A full local date and time, for titles. */
export const formatDateTime = (iso: string): string => dateTime.format(new Date(iso));
const shortDateTime = new Intl.DateTimeFormat(undefined, {
  month: 'short',
  day: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
});

/** The local time of day for today, else a short date and time. */
export function formatWhen(iso: string): string {
  const d = new Date(iso);
  return d.toDateString() === new Date().toDateString() ? clockTime.format(d) : shortDateTime.format(d);
}

const count = new Intl.NumberFormat('en-US');
/** 100000 → "100,000". */
export const formatCount = (n: number): string => count.format(n);

/*
 * Quantities, as Kubernetes writes them ("500m", "16Gi", "1.5", "2e3"). The dashboard only shows
 * them, so a float in base units (cores, bytes, …) is exact enough.
 */
const SUFFIXES: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};

const QUANTITY = /^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$/;

export interface Quantity {
  /** In base units. */
  value: number;
  /** The suffix it was written with ("" for none, or "e3"). */
  suffix: string;
}

export function parseQuantity(text: string | number | undefined): Quantity | null {
  if (text === undefined) return null;
  const m = QUANTITY.exec(String(text).trim());
  if (!m) return null;
  const mantissa = Number(m[1]);
  const suffix = m[2] ?? '';
  const factor = /^[eE]/.test(suffix) ? 10 ** Number(suffix.slice(1)) : (SUFFIXES[suffix] ?? 1);
  return { value: mantissa * factor, suffix };
}

/** The factor of a suffix (1 for none). Exponents count as no unit. */
export const unitFactor = (suffix: string): number => (/^[eE]/.test(suffix) ? 1 : (SUFFIXES[suffix] ?? 1));
export const unitName = (suffix: string): string => (/^[eE]/.test(suffix) ? '' : suffix);

/** A number with at most 2 decimals, without trailing zeros. */
export const formatNumber = (n: number): string => String(Math.round(n * 100) / 100);

/** `{cpu: "1", memory: "1Gi"}` → "cpu=1, memory=1Gi". */
export const formatAmounts = (amounts: Record<string, string> | null | undefined): string =>
  Object.entries(amounts ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/** "cpu=1,memory=1Gi" → `{cpu: "1", memory: "1Gi"}`; throws a sentence for a malformed entry. */
export function parseRequests(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const entry = part.trim();
    if (!entry) continue;
    const eq = entry.indexOf('=');
    const key = eq < 0 ? '' : entry.slice(0, eq).trim();
    const value = eq < 0 ? '' : entry.slice(eq + 1).trim();
    if (!key || !value)
      throw new Error(`Requests: "${entry}" is not resource=quantity (e.g. cpu=1,memory=1Gi).`);
    out[key] = value;
  }
  return out;
}

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

/** `512 B`, `64 KiB`, `1.5 MiB`: binary units, at most one decimal (as the CLI shows sizes). */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const text = unit === 0 || value >= 100 ? String(Math.round(value)) : value.toFixed(1).replace(/\.0$/, '');
  return `${text} ${BYTE_UNITS[unit]}`;
}
