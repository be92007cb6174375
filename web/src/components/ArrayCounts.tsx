/** A job array's tasks by state: as compact text ("12 running · 50 queued · 900 succeeded") and a bar. */
import { formatCount } from '../format.js';
import type { ArraySummary, JobState } from '../types.js';

/** Those in play first, then how the finished ones ended. */
const ORDER: readonly JobState[] = ['running', 'admitted', 'queued', 'succeeded', 'failed', 'cancelled'];

/** "12 running · 50 queued · 900 succeeded": the states that have tasks, in ORDER. */
export function countsText(counts: ArraySummary['counts']): string {
  const parts = ORDER.filter((s) => counts[s] > 0).map((s) => `${formatCount(counts[s])} ${s}`);
  return parts.length > 0 ? parts.join(' · ') : 'no tasks';
}

/** `[0-999%50]`: an array's indices and throttle as submitted, as Slurm shows them. */
export function ArraySpecText({ spec }: { spec: string }) {
  return <code className="array-spec">[{spec}]</code>;
}

/**
 * The tasks' states as one bar of coloured segments. Decoration only: the same counts are always
 * written out next to it.
 */
export function ArrayBar({ summary }: { summary: ArraySummary }) {
  const size = summary.size || 1;
  return (
    <div className="array-bar" aria-hidden="true">
      {ORDER.filter((s) => summary.counts[s] > 0).map((s) => (
        <span
          key={s}
          className={`array-seg array-seg-${s}`}
          style={{ width: `${(summary.counts[s] / size) * 100}%` }}
        />
      ))}
    </div>
  );
}
