/**
 * A queued job's backfill reservation (issue #31): the one it holds ("reserved to start in about
 * 12 min (15:02): cpu=4 of queue hpc"), or the one it waits for, held by another job of its queue
 * that it would delay. From the job's `reservation` blocker; the relative part follows the clock.
 */
import type { Blocker } from '../types.js';
import { formatAmounts, formatDateTime } from '../format.js';
import { useNow } from '../hooks.js';
import { Link, paths } from '../router.js';
import { formatStartsIn } from './EstimatedStart.js';

export type ReservationBlocker = Extract<Blocker, { kind: 'reservation' }>;

/** The job's reservation blocker, if the scheduler says it holds one or waits for one. */
export const reservationOf = (blockers: readonly Blocker[] | undefined): ReservationBlocker | undefined =>
  blockers?.find((b): b is ReservationBlocker => b.kind === 'reservation');

export function Reservation({ job, of: r }: { job: number; of: ReservationBlocker }) {
  const now = useNow();
  const own = r.job === job;
  return (
    <>
      {own ? (
        'reserved to start '
      ) : (
        <>
          waiting for <Link to={paths.job(r.job)}>job {r.job}</Link>, reserved to start{' '}
        </>
      )}
      <time dateTime={r.startAt} title={formatDateTime(r.startAt)}>
        {formatStartsIn(Date.parse(r.startAt) - now)}
      </time>
      : {formatAmounts(r.requests)} of queue {r.queue}
      <div>
        <small className="muted">
          {own
            ? 'backfill: jobs behind it start first only if they cannot delay it'
            : 'backfill: this job would still hold its quota then'}
        </small>
      </div>
    </>
  );
}
