/**
 * Usage per project over a chosen period, from the usage ledger (`GET /usage?by=project`): a bar
 * chart of one resource's hours per project, and the same figures as a table. Read again when
 * jobs end (what the ledger counts), at most every few seconds.
 */
import { useCallback, useEffect, useId, useMemo, useState } from 'react';
import { api, failureOf } from '../api.js';
import { BarChart } from '../components/BarChart.js';
import { CHART_COLORS } from '../components/chart-base.js';
import { ChartControls, pickResource, type PeriodOption } from '../components/ChartControls.js';
import { ErrorAlert, Loading, TableWrap } from '../components/Status.js';
import { formatCount, formatDateTime } from '../format.js';
import { useDebounced, useStreamEvent, useTitle } from '../hooks.js';
import { Link, paths } from '../router.js';
import { isFinished, type UsageReport, type UsageRow } from '../types.js';
import { formatFigure, hoursUnit, withUnit } from '../units.js';

const PERIODS: PeriodOption<string>[] = [
  { value: '24h', label: 'last 24 hours' },
  { value: '7d', label: 'last 7 days' },
  { value: '30d', label: 'last 30 days' },
];

export function UsagePage() {
  useTitle('Usage');
  const [since, setSince] = useState('7d');
  const [report, setReport] = useState<UsageReport | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);

  const load = useCallback(
    async (signal?: AbortSignal) => {
      try {
        setReport(await api.usage('project', since, signal));
        setError(null);
      } catch (e) {
        if (!signal?.aborted) setError(failureOf(e));
      }
    },
    [since],
  );
  useEffect(() => {
    const abort = new AbortController();
    void load(abort.signal);
    return () => abort.abort();
  }, [load]);
  const reload = useDebounced(() => void load(), 2000, 10_000);
  useStreamEvent('job', (n) => {
    if (isFinished(n.state)) reload();
  });
  useStreamEvent('open', ({ resync }) => {
    if (resync) reload();
  });

  const resources = report?.resources ?? [];
  const resource = pickResource(resources, chosen);

  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Usage</h1>
          <p className="page-sub">
            What each project used, from the usage ledger
            {report ? `: ${formatDateTime(report.since)} to ${formatDateTime(report.until)}` : ''}.
          </p>
        </div>
        <ChartControls
          periods={PERIODS}
          period={since}
          onPeriod={setSince}
          resources={resources}
          resource={resource}
          onResource={setChosen}
          minResources={1}
        />
      </div>
      {error && (
        <ErrorAlert>
          {error.status === 404 ? 'This server keeps no usage ledger (GET /usage).' : error.message}
        </ErrorAlert>
      )}
      {!report && !error && <Loading what="the usage" />}
      {report && <Usage report={report} resource={resource} />}
    </>
  );
}

function Usage({ report, resource }: { report: UsageReport; resource: string | undefined }) {
  const id = useId();
  const { unit, divisor } = hoursUnit(resource ?? '');
  const hoursOf = useCallback(
    (r: UsageRow) => (resource === undefined ? 0 : (r.resourceHours[resource] ?? 0) / divisor),
    [resource, divisor],
  );
  const rows = useMemo(() => [...report.rows].sort((a, b) => hoursOf(b) - hoursOf(a)), [report, hoursOf]);
  const categories = useMemo(() => rows.map((r) => r.key), [rows]);
  const values = useMemo(() => rows.map(hoursOf), [rows, hoursOf]);
  const format = (v: number) => withUnit(v, unit);

  return (
    <>
      <div className="card">
        {resource === undefined ? (
          <p className="muted">Nothing was used in this period.</p>
        ) : (
          <BarChart
            id="usage-by-project"
            title={`${resource} per project (${unit})`}
            xLabel="project"
            yLabel={`${resource} (${unit})`}
            categories={categories}
            values={values}
            color={CHART_COLORS.used}
            format={format}
            empty="No project used anything in this period."
          />
        )}
      </div>
      <section aria-labelledby={id} className="card usage-table">
        <h2 id={id}>Per project</h2>
        {rows.length === 0 ? (
          <p className="muted">No jobs ran in this period.</p>
        ) : (
          <TableWrap>
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Project</th>
                  <th scope="col" className="num">
                    Succeeded
                  </th>
                  <th scope="col" className="num">
                    Failed
                  </th>
                  <th scope="col" className="num">
                    Cancelled
                  </th>
                  <th scope="col" className="num">
                    Mean wait
                  </th>
                  <th scope="col" className="num">
                    Allocation hours
                  </th>
                  {resource !== undefined && (
                    <th scope="col" className="num">
                      {resource} ({unit})
                    </th>
                  )}
                </tr>
              </thead>
              <tbody>
                {[...rows, report.totals].map((r, i) => {
                  const total = i === rows.length;
                  return (
                    <tr key={total ? ' total' : r.key} className={total ? 'total' : undefined}>
                      {total ? (
                        <th scope="row">Total</th>
                      ) : (
                        <td>
                          <Link to={paths.jobs(r.key)}>{r.key}</Link>
                        </td>
                      )}
                      <td className="num">{formatCount(r.jobs.succeeded)}</td>
                      <td className="num">{formatCount(r.jobs.failed)}</td>
                      <td className="num">{formatCount(r.jobs.cancelled)}</td>
                      <td className="num">{formatFigure(r.waitSeconds.mean)} s</td>
                      <td className="num">{formatFigure(r.allocationHours)}</td>
                      {resource !== undefined && <td className="num">{formatFigure(hoursOf(r))}</td>}
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableWrap>
        )}
      </section>
    </>
  );
}
