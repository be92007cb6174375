/** Timestamps are stored as epoch milliseconds and shown as ISO 8601. */
export const iso = (ms: number | string): string => new Date(Number(ms)).toISOString();
export const isoOrNull = (ms: number | string | null): string | null => (ms === null ? null : iso(ms));
