/**
 * Usage accounting: every allocation a job held goes into an append-only ledger when it ends, and
 * into rollups per hour and per UTC day that `GET /usage` (`berth usage`) answers from. An **allocation** is one
 * attempt of a job: from its admission (quota taken) to its end — the job's end, its eviction
 * (`requeued`) or a failure that is retried (`retried`). A job that ended without ever being
 * admitted (cancelled while queued, a dependency that failed) still gets a ledger row, not
 * admitted, so that the jobs counted by outcome are complete.
 *
 * The pure parts live here: how an allocation is split into hourly pieces (its held time across
 * the hours it overlaps; its counts and its wait in the hour it ended) and those into days, the
 * period a query covers (whole hours, as Slurm's sreport works on hourly tables) and which of its
 * spans each grain answers, and the report built from the rollups' sums, in the units people
 * read (core·hours, byte·hours).
 */
import { JOBS_RESOURCE } from './cluster-queue.js';
import { parseDuration } from './duration.js';
import { BadRequestError } from './errors.js';
import { isMilliResource, type Amounts } from './quantity.js';
import { dictionary } from './names.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** What a usage report's rows are keyed by. */
export const USAGE_GROUPINGS = ['project', 'user', 'queue'] as const;
export type UsageGrouping = (typeof USAGE_GROUPINGS)[number];

/**
 * How an allocation ended: the job's terminal state for its last one; `requeued` (evicted) or
 * `retried` (failed, run again) for one that another attempt follows.
 */
export const ALLOCATION_OUTCOMES = ['succeeded', 'failed', 'cancelled', 'requeued', 'retried'] as const;
export type AllocationOutcome = (typeof ALLOCATION_OUTCOMES)[number];

/** How far back a report goes when it is not told. */
export const DEFAULT_USAGE_DAYS = 30;

/** One ended allocation: a row of the ledger. Names are copied in: the ledger outlives them. */
export interface Allocation {
  jobId: number;
  /** 1-based: the job's attempts before it, plus one. */
  attempt: number;
  project: string;
  /** The job's name. */
  name: string;
  /** Who submitted the job (its `createdBy`). */
  user: string;
  /** The cluster queue it was charged to. */
  queue: string;
  target: string;
  workerId: number | null;
  /** How many workers it held at once (a gang job's N). */
  workers: number;
  /** Per worker, as submitted and as the API shows them (`{"cpu": "2", "memory": "4Gi"}`). */
  requests: Record<string, string>;
  /** When this attempt entered its queue: the job's submission, or the previous attempt's end or backoff. */
  queuedAt: number;
  /** When it was admitted (its quota taken); null when it never was. */
  admittedAt: number | null;
  /** When its agent started it; null when it never started. */
  startedAt: number | null;
  endedAt: number;
  outcome: AllocationOutcome;
  /** Whether this is the job's last allocation (its outcome is the job's state). */
  final: boolean;
}

/** Sums of one rollup row's kind: what the rollup tables keep per hour and key. */
export interface UsageCounts {
  /** Allocations that held quota (were admitted). */
  allocations: number;
  /** The jobs that ended, by state (final rows only). */
  succeeded: number;
  failed: number;
  cancelled: number;
  requeued: number;
  retried: number;
  /** Waits (admission − queued) of the admitted allocations. */
  waitMsSum: number;
  waitCount: number;
  waitMsMax: number;
  /** Allocation time held (admission to end), in this hour. */
  heldMs: number;
  /** Per resource: its amount in base units (millicores for cpu, bytes, units) × seconds held. */
  resources: Record<string, number>;
}

/** One allocation's contribution to one hour. */
export interface HourlyUsage extends UsageCounts {
  /** The hour's start, epoch ms. */
  hour: number;
}

export const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;
/** The start of the UTC day of `ms`. */
export const dayOf = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

export const noUsage = (): UsageCounts => ({
  allocations: 0,
  succeeded: 0,
  failed: 0,
  cancelled: 0,
  requeued: 0,
  retried: 0,
  waitMsSum: 0,
  waitCount: 0,
  waitMsMax: 0,
  heldMs: 0,
  // Keyed by resource names from outside: no inherited member answers a lookup (issue #40).
  resources: dictionary<number>(),
});

/** `[from, to)` cut at hour boundaries: the hours it overlaps and how long in each (none when empty). */
export function splitByHour(from: number, to: number): { hour: number; ms: number }[] {
  const out: { hour: number; ms: number }[] = [];
  for (let at = from; at < to;) {
    const hour = hourOf(at);
    const end = Math.min(to, hour + HOUR_MS);
    out.push({ hour, ms: end - at });
    at = end;
  }
  return out;
}

/** The wait of an admitted allocation: from entering its queue to its admission (never negative). */
export const waitMs = (a: Pick<Allocation, 'queuedAt' | 'admittedAt'>): number | null =>
  a.admittedAt === null ? null : Math.max(0, a.admittedAt - a.queuedAt);

/**
 * What allocation `a` adds to the rollups, one entry per hour, oldest first. `amounts`: what it
 * held against quota in all (every worker's requests; the implicit `jobs: 1` is left out). Its
 * held time (admission to end) goes to the hours it overlaps, each resource × the seconds held
 * there; its counts and its wait go to the hour it ended.
 */
export function hourlyUsage(a: Allocation, amounts: Amounts): HourlyUsage[] {
  const byHour = new Map<number, HourlyUsage>();
  const at = (hour: number): HourlyUsage => {
    let h = byHour.get(hour);
    if (!h) byHour.set(hour, (h = { hour, ...noUsage() }));
    return h;
  };
  if (a.admittedAt !== null) {
    for (const { hour, ms } of splitByHour(a.admittedAt, a.endedAt)) {
      const h = at(hour);
      h.heldMs += ms;
      for (const [name, amount] of Object.entries(amounts))
        if (name !== JOBS_RESOURCE && amount > 0) h.resources[name] = (amount * ms) / 1000;
    }
  }
  const end = at(hourOf(a.endedAt));
  end[a.outcome] += 1;
  const wait = waitMs(a);
  if (wait !== null) {
    end.allocations = 1;
    end.waitCount = 1;
    end.waitMsSum = wait;
    end.waitMsMax = wait;
  }
  return [...byHour.values()].sort((x, y) => x.hour - y.hour);
}

/**
 * The same pieces summed per UTC day (`hour`: the day's first hour): the daily rollups, which
 * answer the whole days of a long period 24 times faster than its hours would. A day's sums are
 * exactly those of its hours.
 */
export function dailyUsage(hourly: HourlyUsage[]): HourlyUsage[] {
  const byDay = new Map<number, HourlyUsage>();
  for (const h of hourly) {
    const day = dayOf(h.hour);
    let d = byDay.get(day);
    if (!d) byDay.set(day, (d = { hour: day, ...noUsage() }));
    addUsage(d, h);
  }
  return [...byDay.values()];
}

/** Adds `b` into `a` (sums, and the larger maximum). */
export function addUsage(a: UsageCounts, b: UsageCounts): void {
  a.allocations += b.allocations;
  a.succeeded += b.succeeded;
  a.failed += b.failed;
  a.cancelled += b.cancelled;
  a.requeued += b.requeued;
  a.retried += b.retried;
  a.waitMsSum += b.waitMsSum;
  a.waitCount += b.waitCount;
  a.waitMsMax = Math.max(a.waitMsMax, b.waitMsMax);
  a.heldMs += b.heldMs;
  for (const [name, v] of Object.entries(b.resources)) a.resources[name] = (a.resources[name] ?? 0) + v;
}

/** The hours a report covers: `since` inclusive, `until` exclusive, both on hour boundaries. */
export interface UsagePeriod {
  since: number;
  until: number;
}

const TIME_HELP = 'write an ISO 8601 time (2026-11-01T00:00:00Z) or a span back from now (7d, 12h, 90m)';

/**
 * Where a period's sums come from: its whole UTC days from the daily rollups, the hours before
 * the first and after the last of them from the hourly ones (all of it, within one day).
 */
export function periodSpans(p: UsagePeriod): { days: UsagePeriod[]; hours: UsagePeriod[] } {
  const first = Math.ceil(p.since / DAY_MS) * DAY_MS;
  const last = dayOf(p.until);
  if (first >= last) return { days: [], hours: [p] };
  const hours = [
    { since: p.since, until: first },
    { since: last, until: p.until },
  ].filter((h) => h.since < h.until);
  return { days: [{ since: first, until: last }], hours };
}

/** The furthest a Date reaches either side of 1970 (ECMAScript's time range), in ms. */
const MAX_TIME_MS = 8.64e15;

/** `7d` (that long before `now`) or an ISO 8601 time → epoch ms; 400 naming `field` otherwise. */
export function usageTime(field: string, text: string, now: number): number {
  const seconds = parseDuration(text);
  const ms = seconds !== undefined ? now - seconds * 1000 : /\d{4}-\d\d/.test(text) ? Date.parse(text) : NaN;
  if (!Number.isFinite(ms)) throw new BadRequestError(`${field}: "${text}" is not a time: ${TIME_HELP}`);
  // A span of millions of years parses, but lands outside the dates a report can name (its
  // since and until are ISO times): refused here rather than failing as it is written out.
  if (Math.abs(ms) > MAX_TIME_MS)
    throw new BadRequestError(
      `${field}: "${text}" is out of range: a time must fall between the years -271821 and 275760`,
    );
  return ms;
}

/**
 * The period a query asks for, widened to whole hours: `since` rounded down, `until` up (as the
 * rollups are hourly). Defaults: the last DEFAULT_USAGE_DAYS days, until now.
 */
export function usagePeriod(since: string | undefined, until: string | undefined, now: number): UsagePeriod {
  const from = since === undefined ? now - DEFAULT_USAGE_DAYS * 24 * HOUR_MS : usageTime('since', since, now);
  const to = until === undefined ? now : usageTime('until', until, now);
  const period = { since: hourOf(from), until: Math.ceil(to / HOUR_MS) * HOUR_MS };
  if (period.since >= period.until)
    throw new BadRequestError(
      `since (${new Date(from).toISOString()}) must be before until (${new Date(to).toISOString()})`,
    );
  return period;
}

/** A usage report's figures for one key, or for all of them (`totals`). */
export interface UsageRow {
  /** The project, user or queue (`by`); "" in the totals. */
  key: string;
  /** Jobs that ended in the period, by their state. */
  jobs: { succeeded: number; failed: number; cancelled: number };
  /** Allocations that ended in the period and held quota (were admitted). */
  allocations: number;
  /** Of them, evicted and queued again, or failed and retried. */
  requeued: number;
  retried: number;
  /** From entering the queue to admission, over those allocations. */
  waitSeconds: { mean: number; max: number };
  /** Time allocations were held (admission to end) within the period. */
  allocationHours: number;
  /** Per resource: cpu in core·hours, byte resources (memory) in byte·hours, others unit·hours. */
  resourceHours: Record<string, number>;
}

/** `GET /usage`. */
export interface UsageReport {
  /** The whole hours covered, ISO 8601. */
  since: string;
  until: string;
  by: UsageGrouping;
  /** Every resource named in `rows`, sorted. */
  resources: string[];
  /** Sorted by key. */
  rows: UsageRow[];
  totals: UsageRow;
}

/**
 * A resource's amount·seconds (base units) in hours: millicore·seconds of cpu → core·hours, any
 * other resource's unit (byte)·seconds → unit (byte)·hours.
 */
export const resourceHours = (name: string, amountSeconds: number): number =>
  amountSeconds / (isMilliResource(name) ? 1000 : 1) / 3600;

function toRow(key: string, c: UsageCounts, resources: string[]): UsageRow {
  return {
    key,
    jobs: { succeeded: c.succeeded, failed: c.failed, cancelled: c.cancelled },
    allocations: c.allocations,
    requeued: c.requeued,
    retried: c.retried,
    waitSeconds: {
      mean: c.waitCount === 0 ? 0 : c.waitMsSum / c.waitCount / 1000,
      max: c.waitMsMax / 1000,
    },
    allocationHours: c.heldMs / HOUR_MS,
    resourceHours: Object.fromEntries(resources.map((r) => [r, resourceHours(r, c.resources[r] ?? 0)])),
  };
}

/** The report from the rollups' sums per key (keys in any order). */
export function usageReport(
  period: UsagePeriod,
  by: UsageGrouping,
  sums: ({ key: string } & UsageCounts)[],
): UsageReport {
  const total = noUsage();
  for (const s of sums) addUsage(total, s);
  const resources = Object.keys(total.resources).sort();
  const rows = [...sums]
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((s) => toRow(s.key, s, resources));
  return {
    since: new Date(period.since).toISOString(),
    until: new Date(period.until).toISOString(),
    by,
    resources,
    rows,
    totals: toRow('', total, resources),
  };
}

/** Resources counted in bytes (read as GiB·h): memory, storage, huge pages. */
export const isByteResource = (name: string): boolean =>
  /(^|[-_./])(memory|storage)$/.test(name) || name.startsWith('hugepages-');
