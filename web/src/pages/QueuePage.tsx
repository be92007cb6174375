/**
 * One cluster queue over time: its usage of a resource (used, borrowed, nominal), its pending and
 * admitted jobs, and its admissions per minute — from `GET /cluster-queues/{name}/history`, read
 * again at every sample the server takes (10 s by default), so the charts move as it records.
 */
import { useEffect, useMemo, useState } from 'react';
import { api, failureOf } from '../api.js';
import { CHART_COLORS } from '../components/chart-base.js';
import { ChartControls, pickResource, type PeriodOption } from '../components/ChartControls.js';
import { ErrorAlert, Loading } from '../components/Status.js';
import { TimeChart, type TimeSeries } from '../components/TimeChart.js';
import { formatCount, formatNumber } from '../format.js';
import { useTitle } from '../hooks.js';
import { Link, paths } from '../router.js';
import type { QueueHistorySample, QueueHistoryView } from '../types.js';
import { axisLabel, resourceUnit, withUnit } from '../units.js';

const PERIODS: PeriodOption<number>[] = [
  { value: 15, label: 'last 15 minutes' },
  { value: 60, label: 'last hour' },
  { value: 360, label: 'last 6 hours' },
  { value: 1440, label: 'last 24 hours' },
];

/** Reads at most this often, whatever the server's sample interval. */
const MIN_REFRESH_MS = 1000;

export function QueuePage({ name }: { name: string }) {
  useTitle(`Queue ${name}`);
  const [minutes, setMinutes] = useState(60);
  const [history, setHistory] = useState<QueueHistoryView | null>(null);
  const [error, setError] = useState<{ status: number; message: string } | null>(null);
  const [chosen, setChosen] = useState<string | null>(null);

  useEffect(() => {
    const abort = new AbortController();
    let timer: number | undefined;
    const read = async () => {
      let again = 10_000;
      try {
        const h = await api.queueHistory(name, minutes, abort.signal);
        setHistory(h);
        setError(null);
        again = Math.max(MIN_REFRESH_MS, h.intervalSeconds * 1000);
      } catch (e) {
        if (abort.signal.aborted) return;
        const failure = failureOf(e);
        setError(failure);
        if (failure.status === 404) return;
      }
      timer = window.setTimeout(() => void read(), again);
    };
    void read();
    return () => {
      abort.abort();
      window.clearTimeout(timer);
    };
  }, [name, minutes]);

  const resources = history?.resources ?? [];
  const resource = pickResource(resources, chosen);
  const keptMinutes = history ? history.keepSeconds / 60 : Infinity;
  const periods = PERIODS.filter((p, i) => i === 0 || p.value <= keptMinutes || p.value === minutes);

  return (
    <>
      <div className="page-head">
        <div>
          <h1 tabIndex={-1}>Cluster queue {name}</h1>
          <p className="page-sub">
            Its figures over time, sampled by the server
            {history && history.intervalSeconds > 0
              ? ` every ${formatNumber(history.intervalSeconds)} s`
              : ''}
            . <Link to={paths.overview()}>All queues</Link>
          </p>
        </div>
        <ChartControls
          periods={periods}
          period={minutes}
          onPeriod={setMinutes}
          resources={resources}
          resource={resource}
          onResource={setChosen}
        />
      </div>
      {error && (
        <ErrorAlert>
          {error.status === 404 ? `There is no cluster queue "${name}".` : error.message}
        </ErrorAlert>
      )}
      {!history && !error && <Loading what={`the history of queue ${name}`} />}
      {history && <QueueCharts history={history} resource={resource} />}
    </>
  );
}

/** Admissions summed per minute: the minute's middle, its count, and the minutes' span. */
function perMinute(samples: QueueHistorySample[]): {
  times: number[];
  counts: number[];
  span: [number, number] | undefined;
} {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    const minute = Math.floor(Date.parse(s.at) / 60_000) * 60_000;
    buckets.set(minute, (buckets.get(minute) ?? 0) + s.admissions);
  }
  const minutes = [...buckets.keys()].sort((a, b) => a - b);
  const first = minutes[0];
  const last = minutes.at(-1);
  return {
    times: minutes.map((m) => m + 30_000),
    counts: minutes.map((m) => buckets.get(m) ?? 0),
    span: first === undefined || last === undefined ? undefined : [first, last + 60_000],
  };
}

function QueueCharts({ history, resource }: { history: QueueHistoryView; resource: string | undefined }) {
  const { samples } = history;
  const times = useMemo(() => samples.map((s) => Date.parse(s.at)), [samples]);
  const empty = `No samples yet: the server takes one every ${formatNumber(history.intervalSeconds)} s.`;

  const { unit, divisor } = resourceUnit(resource ?? '');
  const usage = useMemo<TimeSeries[]>(() => {
    if (resource === undefined) return [];
    const of = (kind: 'used' | 'borrowed' | 'nominal') =>
      samples.map((s) => {
        const v = s[kind][resource];
        return v === undefined ? null : v / divisor;
      });
    return [
      { key: 'used', label: 'used', color: CHART_COLORS.used, values: of('used') },
      { key: 'borrowed', label: 'borrowed', color: CHART_COLORS.borrowed, values: of('borrowed') },
      {
        key: 'nominal',
        label: 'nominal quota',
        color: CHART_COLORS.nominal,
        values: of('nominal'),
        dashed: true,
      },
    ];
  }, [samples, resource, divisor]);

  const jobs = useMemo<TimeSeries[]>(
    () => [
      {
        key: 'pending',
        label: 'pending',
        color: CHART_COLORS.pending,
        values: samples.map((s) => s.pending),
      },
      {
        key: 'admitted',
        label: 'admitted',
        color: CHART_COLORS.admitted,
        values: samples.map((s) => s.admitted),
      },
    ],
    [samples],
  );

  const minutes = useMemo(() => perMinute(samples), [samples]);
  const admissions = useMemo<TimeSeries[]>(
    () => [
      {
        key: 'admissions',
        label: 'admissions this minute',
        color: CHART_COLORS.admissions,
        values: minutes.counts,
        bars: true,
      },
    ],
    [minutes],
  );
  const total = minutes.counts.reduce((a, b) => a + b, 0);
  const jobsText = (v: number) => `${formatCount(v)} job${v === 1 ? '' : 's'}`;

  return (
    <div className="chart-grid">
      <div className="card">
        {resource === undefined ? (
          <p className="muted">This queue has no quota and nothing in use.</p>
        ) : (
          <TimeChart
            id="usage"
            title={`Usage of ${resource}`}
            yLabel={axisLabel(resource, unit)}
            times={times}
            series={usage}
            format={(v) => withUnit(v, unit)}
            empty={empty}
          />
        )}
      </div>
      <div className="card">
        <TimeChart
          id="jobs"
          title="Pending and admitted jobs"
          yLabel="jobs"
          times={times}
          series={jobs}
          format={jobsText}
          whole
          empty={empty}
        />
      </div>
      <div className="card">
        <TimeChart
          id="admissions"
          title="Admissions per minute"
          yLabel="jobs / minute"
          times={minutes.times}
          series={admissions}
          format={jobsText}
          whole
          empty={empty}
          dataset={{ total: String(total) }}
          span={minutes.span}
        />
        <p className="muted">{formatCount(total)} admitted in the period shown.</p>
      </div>
    </div>
  );
}
