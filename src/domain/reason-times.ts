/**
 * Times in what a person reads (issue #45). The server writes an instant into a reason as ISO 8601
 * in UTC ("reserved to start at 2026-12-01T19:26:37.785Z: …"), exact for a program and given
 * beside the text as data (the job view's `reasonTimes`); the CLI and the dashboard show it the way
 * `squeue --start` and kubectl's AGE columns do: in the reader's own zone, and relative to now
 * where it is near ("at 19:26 (in 9m54s)"). `-o json` keeps the ISO text.
 *
 * Pure: the clock and the zone are the caller's.
 */
import { formatSpan } from './duration.js';

/** An instant as the server writes one: ISO 8601, UTC, milliseconds optional. */
const INSTANT = /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z/g;

/** Within this of now a time is also said relative to it: beyond, the date says enough. */
const NEAR_MS = 24 * 3_600_000;

export interface TimeStyle {
  /** An IANA zone (`Europe/Berlin`); the reader's own when absent. */
  timeZone?: string;
  /** To the second (a job's own times: created, started); else to the minute (a plan's). */
  seconds?: boolean;
  /** Also how far from now, within a day (default); false for a column of times (a timeline). */
  relative?: boolean;
}

/** The instants `text` names, in order, as written (what the API gives beside a reason). */
export function instantsIn(text: string): string[] {
  return [...text.matchAll(INSTANT)].map((m) => m[0]).filter((s) => !Number.isNaN(Date.parse(s)));
}

interface Formatters {
  clock: Intl.DateTimeFormat;
  day: Intl.DateTimeFormat;
  year: Intl.DateTimeFormat;
}
const formatters = new Map<string, Formatters>();

function formattersFor({ timeZone, seconds }: TimeStyle): Formatters {
  const key = `${timeZone ?? ''} ${seconds === true}`;
  let f = formatters.get(key);
  if (f === undefined) {
    // English month names beside English text; a 24-hour clock, as Slurm and kubectl print.
    f = {
      clock: new Intl.DateTimeFormat('en-US', {
        hour: '2-digit',
        minute: '2-digit',
        ...(seconds === true ? { second: '2-digit' as const } : {}),
        hourCycle: 'h23',
        timeZone,
      }),
      day: new Intl.DateTimeFormat('en-US', { month: 'short', day: 'numeric', timeZone }),
      year: new Intl.DateTimeFormat('en-US', { year: 'numeric', timeZone }),
    };
    formatters.set(key, f);
  }
  return f;
}

/**
 * `at` for a person at `now`: "19:26 (in 9m54s)", "08:10 (3h20m ago)", "Dec 9 14:00",
 * "Jan 4 2028 09:00" — the date only when it is not today's, its year only when not this year's,
 * the span only within a day.
 */
export function personTime(at: number, now: number, style: TimeStyle = {}): string {
  const { clock, day, year } = formattersFor(style);
  const sameYear = year.format(at) === year.format(now);
  const date = sameYear ? day.format(at) : `${day.format(at)} ${year.format(at)}`;
  const when = sameYear && date === day.format(now) ? clock.format(at) : `${date} ${clock.format(at)}`;
  const ms = at - now;
  if (style.relative === false || Math.abs(ms) >= NEAR_MS) return when;
  if (Math.abs(ms) < 1000) return `${when} (now)`;
  return ms > 0 ? `${when} (in ${formatSpan(ms, 2)})` : `${when} (${formatSpan(-ms, 2)} ago)`;
}

/** `text` with every instant in it said for a person (`personTime`); the rest as it was. */
export function timesForPerson(text: string, now: number, style: TimeStyle = {}): string {
  return text.replace(INSTANT, (iso) => {
    const at = Date.parse(iso);
    return Number.isNaN(at) ? iso : personTime(at, now, style);
  });
}
