/**
 * The attempts of a job that ran more than once (retried after a failure, or evicted and
 * requeued): each with how it ended, what it was charged to, and its own output on request. Read
 * again at each change of the job's state or attempt count (the page follows the job).
 */
import { useEffect, useId, useState } from 'react';
import { api, ApiError } from '../api.js';
import { formatDateTime, formatWhen } from '../format.js';
import type { Job, JobAttempt } from '../types.js';
import { ErrorAlert, Loading, TableWrap } from './Status.js';
import { printable } from '../../../src/domain/printable.js';

const CHARGED: Record<string, string> = {
  job: "the job's own failure",
  infrastructure: "the infrastructure's failure",
  none: 'no budget (evicted)',
};

export function Attempts({ job }: { job: Job }) {
  const id = useId();
  const [attempts, setAttempts] = useState<JobAttempt[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [shown, setShown] = useState<{ attempt: number; text: string | null } | null>(null);
  const ranAgain = job.attempts > 0;

  useEffect(() => {
    if (!ranAgain) return;
    const abort = new AbortController();
    api.jobAttempts(job.id, abort.signal).then(
      (list) => {
        setAttempts(list);
        setError(null);
      },
      (e: unknown) => {
        if (!abort.signal.aborted) setError(e instanceof ApiError ? e.message : String(e));
      },
    );
    return () => abort.abort();
  }, [job.id, job.state, job.attempts, ranAgain]);

  const showLog = (attempt: number) => {
    setShown({ attempt, text: null });
    api.attemptLog(job.id, attempt).then(
      (text) => setShown({ attempt, text }),
      (e: unknown) => setError(e instanceof ApiError ? e.message : String(e)),
    );
  };

  if (!ranAgain) return null;
  return (
    <section aria-labelledby={id} className="card attempts">
      <h2 id={id}>Attempts</h2>
      {error && <ErrorAlert>{error}</ErrorAlert>}
      {attempts === null ? (
        !error && <Loading what="the attempts" />
      ) : (
        <TableWrap>
          <table className="table compact">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Outcome</th>
                <th scope="col">Reason</th>
                <th scope="col" className="num">
                  Exit
                </th>
                <th scope="col">Charged to</th>
                <th scope="col">Ended</th>
                <th scope="col">Output</th>
              </tr>
            </thead>
            <tbody>
              {attempts.map((a) => (
                <tr key={a.attempt}>
                  <td>{a.attempt}</td>
                  <td>{a.outcome}</td>
                  <td>{printable(a.reason)}</td>
                  <td className="num">{a.exitCode ?? <span className="muted">–</span>}</td>
                  <td>
                    {a.charged === null ? (
                      <span className="muted">–</span>
                    ) : (
                      (CHARGED[a.charged] ?? a.charged)
                    )}
                  </td>
                  <td>
                    {a.endedAt ? (
                      <time dateTime={a.endedAt} title={formatDateTime(a.endedAt)}>
                        {formatWhen(a.endedAt)}
                      </time>
                    ) : (
                      <span className="muted">–</span>
                    )}
                  </td>
                  <td>
                    <button
                      type="button"
                      className="button-quiet"
                      aria-label={`Output of attempt ${a.attempt}`}
                      onClick={() => showLog(a.attempt)}
                    >
                      Show
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {shown && (
        <>
          <h3>Output of attempt {shown.attempt}</h3>
          {shown.text === null ? (
            <Loading what={`the output of attempt ${shown.attempt}`} />
          ) : (
            <pre className="log" aria-label={`Output of attempt ${shown.attempt}`} tabIndex={0}>
              {shown.text || '(no output)'}
            </pre>
          )}
        </>
      )}
    </section>
  );
}
