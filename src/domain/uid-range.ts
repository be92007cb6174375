/** A range of uids (`factories.NAME.runAs.uids`): the identities a local factory gives its jobs. */

/** A uid range as berth.yaml gives it: `200000-200999` (both ends included). */
export interface UidRange {
  first: number;
  last: number;
}

/** The greatest uid a job can have: Node's spawn takes an int32 (Linux would take up to 2^32 - 2). */
const MAX_UID = 0x7fffffff;

/** Parses `FIRST-LAST`; throws an Error whose message says what is wrong (the caller names the key). */
export function parseUidRange(text: string): UidRange {
  const m = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  if (!m) throw new Error(`${JSON.stringify(text)} is not a range of uids (FIRST-LAST, e.g. 200000-200999)`);
  const first = Number(m[1]);
  const last = Number(m[2]);
  // A uid below 1000 is a system account's on most distributions: never a job's.
  if (first < 1000)
    throw new Error(`starts at ${first}: a job's uid must be 1000 or more (not a system account)`);
  if (last > MAX_UID) throw new Error(`ends at ${last}: the greatest uid is ${MAX_UID}`);
  if (last < first) throw new Error(`ends (${last}) before it starts (${first})`);
  return { first, last };
}

export const rangeSize = (r: UidRange): number => r.last - r.first + 1;

/** How many uids a local factory gets by default: more than any one machine runs jobs at once. */
export const DEFAULT_RANGE_SIZE = 10_000;
/** Default ranges lie above this: far above any account a distribution or /etc/subuid hands out. */
const DEFAULT_RANGES_START = 100_000_000;
/** How many default ranges there are to pick from: up to 2.1e9, below MAX_UID. */
const DEFAULT_RANGES = 200_000;

/**
 * The default range of one local factory of one installation, picked by a hash of `seed` (its data
 * directory and name): the factories of one server, and the servers on one machine (each with a
 * data directory of its own: tests start dozens), get ranges apart without being configured —
 * two of ten servers on one machine share a range with odds of about 1 in 4,400.
 */
export function defaultUidRange(seed: string): UidRange {
  // FNV-1a, 32 bits: stable across versions and machines, which a range must be.
  let h = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) h = Math.imul(h ^ seed.charCodeAt(i), 0x01000193) >>> 0;
  const first = DEFAULT_RANGES_START + (h % DEFAULT_RANGES) * DEFAULT_RANGE_SIZE;
  return { first, last: first + DEFAULT_RANGE_SIZE - 1 };
}

/** Whether two ranges share a uid. */
export const overlap = (a: UidRange, b: UidRange): boolean => a.first <= b.last && b.first <= a.last;
