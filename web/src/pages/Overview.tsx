/** The overview: every cluster queue's quota in use, and the pools (factories, resource types). */
import { useEffect, useId, useState } from 'react';
import { api, ApiError } from '../api.js';
import { Meter, MeterLegend } from '../components/Meter.js';
import { ErrorAlert, Loading, TableWrap } from '../components/Status.js';
import { formatCount } from '../format.js';
import { useStreamEvent, useTitle } from '../hooks.js';
import { Link, paths } from '../router.js';
import { stream } from '../stream.js';
import type { ClusterQueueView, Figures, PoolFigures } from '../types.js';

export function Overview() {
  useTitle('Overview');
  const [figures, setFigures] = useState<Figures | null>(stream.figures);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (stream.figures) return; // the stream's latest are as fresh as a request's
    const abort = new AbortController();
    Promise.all([
      api.clusterQueues(abort.signal),
      api.factories(abort.signal),
      api.resourceTypes(abort.signal),
    ]).then(
      ([clusterQueues, factories, resourceTypes]) =>
        // The stream may have been quicker.
        setFigures((f) => f ?? { clusterQueues, factories, resourceTypes }),
      (e: unknown) => {
        if (!abort.signal.aborted) setError(e instanceof ApiError ? e.message : String(e));
      },
    );
    return () => abort.abort();
  }, []);
  useStreamEvent('figures', (f) => {
    setFigures(f);
    setError(null);
  });

  return (
    <>
      <h1 tabIndex={-1}>Overview</h1>
      {error && !figures && <ErrorAlert>{error}</ErrorAlert>}
      {!figures && !error && <Loading what="the cluster" />}
      {figures && (
        <>
          <Queues queues={figures.clusterQueues} />
          <div className="pools">
            <Pools title="Factories" rows={figures.factories} empty="No factories are configured." />
            <Pools
              title="Resource types"
              rows={figures.resourceTypes}
              empty="No resource types are configured."
            />
          </div>
        </>
      )}
    </>
  );
}

function Queues({ queues }: { queues: ClusterQueueView[] }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className="queues">
      <div className="section-head">
        <h2 id={id}>Cluster queues</h2>
        <MeterLegend />
      </div>
      {queues.length === 0 ? (
        <p className="muted">No cluster queues yet.</p>
      ) : (
        <div className="queue-grid">
          {queues.map((q) => (
            <QueueCard key={q.name} queue={q} />
          ))}
        </div>
      )}
    </section>
  );
}

function QueueCard({ queue: q }: { queue: ClusterQueueView }) {
  const id = useId();
  const resources = Object.keys(q.quota);
  const held = q.stopPolicy !== 'None';
  return (
    <section aria-labelledby={id} className="card queue">
      <div className="queue-head">
        <h3 id={id}>{q.name}</h3>
        {held && (
          <span className="badge badge-warn" title={`stop policy ${q.stopPolicy}: nothing new is admitted`}>
            {q.stopPolicy === 'Hold' ? 'held' : 'held, draining'}
          </span>
        )}
        <Link to={paths.queue(q.name)} className="queue-link" aria-label={`${q.name} over time`}>
          Over time
        </Link>
      </div>
      <p className="queue-meta">
        {q.cohort ? (
          <>
            cohort <strong>{q.cohort}</strong>
          </>
        ) : (
          'no cohort'
        )}
        <span aria-hidden="true"> · </span>
        {q.queueingStrategy}
      </p>
      <div className="meters">
        {resources.length === 0 && <p className="muted">No quota: nothing is limited.</p>}
        {resources.map((r) => (
          <Meter
            key={r}
            label={`${q.name} ${r}`}
            resource={r}
            nominal={q.quota[r] ?? '0'}
            used={q.usage[r]}
            borrowed={q.borrowed[r]}
          />
        ))}
      </div>
      <p className="queue-counts">
        <span className={q.pending > 0 ? 'count count-pending' : 'count'}>
          {formatCount(q.pending)} pending
        </span>
        <span className={q.running > 0 ? 'count count-running' : 'count'}>
          {formatCount(q.running)} running
        </span>
        {q.admitted > q.running && (
          <span className="count" title="admitted: holding quota, getting resources or a worker">
            {formatCount(q.admitted - q.running)} starting
          </span>
        )}
      </p>
    </section>
  );
}

function Pools({ title, rows, empty }: { title: string; rows: PoolFigures[]; empty: string }) {
  const id = useId();
  return (
    <section aria-labelledby={id} className="pool">
      <h2 id={id}>{title}</h2>
      {rows.length === 0 ? (
        <p className="muted">{empty}</p>
      ) : (
        <TableWrap>
          <table className="table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col" className="num">
                  Capacity
                </th>
                <th scope="col" className="num">
                  In use
                </th>
                <th scope="col" className="num">
                  Waiting
                </th>
                <th scope="col">Kind</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((p) => (
                <tr key={p.name}>
                  <td>
                    {p.name}
                    {p.devices?.map((d) => (
                      <span key={d.kind} className={`muted${d.inUse >= d.total ? ' full' : ''}`}>
                        {' '}
                        · {d.kind} {formatCount(d.inUse)}/{formatCount(d.total)}
                      </span>
                    ))}
                  </td>
                  <td className="num">{formatCount(p.capacity)}</td>
                  <td className="num">
                    <span className={p.inUse >= p.capacity && p.capacity > 0 ? 'full' : undefined}>
                      {formatCount(p.inUse)}
                    </span>
                  </td>
                  <td className="num">
                    <span className={p.waiting > 0 ? 'waiting' : undefined}>{formatCount(p.waiting)}</span>
                  </td>
                  <td className="muted">{p.kind}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}
