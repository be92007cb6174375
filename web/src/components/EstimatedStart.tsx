/**
 * A queued job's estimated start: how far off it is and at what time ("in about 12 min (15:02)"),
 * or "none", with the server's account of how the estimate was made (or why there is none) below
 * it in smaller print. The relative part follows the page's clock.
 */
import { formatDateTime } from '../format.js';
import { useNow } from '../hooks.js';

const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
const dayAndClock = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

/** "15:02" (or "3:02 PM") today, else the date too: "Nov 25, 2026, 15:02". */
function formatAt(at: Date, now: number): string {
  return at.toDateString() === new Date(now).toDateString() ? clock.format(at) : dayAndClock.format(at);
}

/** "in about 12 min", "in about 2 h 5 min", "in about 3 d 4 h"; "about now" once it is due. */
export function formatStartsIn(ms: number): string {
  if (ms <= 30_000) return 'about now';
  const minutes = Math.max(1, Math.round(ms / 60_000));
  if (minutes < 60) return `in about ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `in about ${hours} h${minutes % 60 ? ` ${minutes % 60} min` : ''}`;
  const days = Math.floor(hours / 24);
  return `in about ${days} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
}

export function EstimatedStart({ at, how }: { at: string | null; how: string }) {
  const now = useNow();
  const start = at === null ? null : Date.parse(at);
  return (
    <>
      {at === null || start === null ? (
        <span>none</span>
      ) : (
        <time dateTime={at} title={formatDateTime(at)}>
          {formatStartsIn(start - now)} ({formatAt(new Date(start), now)})
        </time>
      )}
      <div>
        <small className="muted">{how}</small>
      </div>
    </>
  );
}
