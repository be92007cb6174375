/** Ages and durations that tick, with the absolute time in the element's title. */
import { formatDateTime, formatDuration } from '../format.js';
import { useNow } from '../hooks.js';

/** How long ago `at` was: "12s", "3m 4s". */
export function Age({ at }: { at: string }) {
  const now = useNow();
  return (
    <time dateTime={at} title={formatDateTime(at)}>
      {formatDuration(now - Date.parse(at))}
    </time>
  );
}

/** From `from` to `to` (or now, while it lasts); "–" before it starts. */
export function Duration({ from, to }: { from: string | null; to: string | null }) {
  const now = useNow();
  if (!from) return <span title="not started yet">–</span>;
  const end = to ? Date.parse(to) : now;
  const ms = end - Date.parse(from);
  return (
    <time
      dateTime={`PT${Math.max(0, Math.floor(ms / 1000))}S`}
      title={`${formatDateTime(from)} – ${to ? formatDateTime(to) : 'now'}`}
    >
      {formatDuration(ms)}
    </time>
  );
}
