/**
 * What the charts share: a uPlot chart living in a React component (made when its shape changes,
 * fed new data in place, as wide as its container), and the frame around it — a title, the plot
 * with a text alternative, and a legend that shows the latest values (or those under the cursor).
 *
 * uPlot draws on a canvas, so the frame carries what tests and screen readers read: the figure's
 * `data-chart` and `data-points`, and each legend entry's `data-series` and `data-value`.
 */
import { useEffect, useLayoutEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import '../charts.css';

/** The dashboard's colours (styles.css), as canvas needs them: concrete values. */
export const CHART_COLORS = {
  used: '#0e7490',
  borrowed: '#d97706',
  nominal: '#59616b',
  pending: '#8a4b00',
  admitted: '#2563eb',
  admissions: '#0b6e75',
  axis: '#59616b',
  grid: '#e3e7ec',
} as const;

const FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Arial, sans-serif';
const LABEL_FONT = '600 12px system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Arial, sans-serif';

/** An axis in the dashboard's style, with its title. */
export function axis(label: string, extra: uPlot.Axis = {}): uPlot.Axis {
  return {
    label,
    stroke: CHART_COLORS.axis,
    font: FONT,
    labelFont: LABEL_FONT,
    grid: { stroke: CHART_COLORS.grid, width: 1 },
    ticks: { stroke: CHART_COLORS.grid, width: 1, size: 4 },
    ...extra,
  };
}

/** A value axis's tick labels, with as many decimals as the step between ticks needs. */
export const tickValues: uPlot.Axis.Values = (_u, splits, _axis, _space, step) => {
  const decimals = Math.min(8, Math.max(0, Math.ceil(-Math.log10(step) - 1e-9)));
  return splits.map((v) => v.toFixed(decimals));
};

/** Tick steps for axes that count whole things (jobs): never a tick at 0.5 of a job. */
export const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 100_000, 1_000_000];

/** A y scale from 0 to a little above the largest value (1 when everything is 0). */
export const fromZero: uPlot.Scale = {
  range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1],
};

const MIN_WIDTH = 240;

/**
 * Runs a uPlot chart inside the returned ref's element: made from `options()` when `shape`
 * changes, given `data` whenever it changes, resized with its container. Also returns the index
 * of the point under the cursor (null when the cursor is elsewhere).
 */
export function useUPlot(
  options: () => Omit<uPlot.Options, 'width' | 'height'>,
  data: uPlot.AlignedData,
  shape: string,
  height: number,
): { ref: RefObject<HTMLDivElement | null>; cursor: number | null } {
  const ref = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const latest = useRef({ options, data });
  const [cursor, setCursor] = useState<number | null>(null);

  useLayoutEffect(() => {
    latest.current = { options, data };
  });

  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    const width = () => Math.max(el.clientWidth, MIN_WIDTH);
    const opts: uPlot.Options = {
      ...latest.current.options(),
      width: width(),
      height,
      hooks: { setCursor: [(u) => setCursor(u.cursor.idx ?? null)] },
    };
    const u = new uPlot(opts, latest.current.data, el);
    plot.current = u;
    const observer = new ResizeObserver(() => {
      if (u.width !== width()) u.setSize({ width: width(), height });
    });
    observer.observe(el);
    return () => {
      observer.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return { ref, cursor };
}

export interface LegendEntry {
  /** What `data-series` says (for tests): a stable key. */
  key: string;
  label: string;
  color: string;
  dashed?: boolean;
  /** The raw value shown (`data-value`), null when there is none. */
  value: number | null;
  /** The value as read: "1.5 cores". */
  text: string;
}

interface FrameProps {
  /** `data-chart`, for tests. */
  id: string;
  title: string;
  /** The text alternative of the plot: what it shows and its latest values. */
  summary: string;
  points: number;
  plotRef: RefObject<HTMLDivElement | null>;
  legend: LegendEntry[];
  /** Said over the plot when it has no data. */
  empty?: string;
  /** What the legend's values are: "latest", or the time under the cursor. */
  legendNote?: string;
  /** More `data-*` attributes of the figure (names without `data-`). */
  dataset?: Record<string, string>;
  children?: ReactNode;
}

export function ChartFrame({
  id,
  title,
  summary,
  points,
  plotRef,
  legend,
  empty,
  legendNote,
  dataset = {},
  children,
}: FrameProps) {
  const attributes = Object.fromEntries(Object.entries(dataset).map(([k, v]) => [`data-${k}`, v]));
  return (
    <figure className="chart" data-chart={id} data-points={points} {...attributes}>
      <figcaption className="chart-title">{title}</figcaption>
      <div className="chart-area">
        <div ref={plotRef} className="chart-plot" role="img" aria-label={summary} />
        {points === 0 && empty && <p className="chart-empty muted">{empty}</p>}
      </div>
      {legend.length > 0 && (
        <ul className="chart-legend" aria-label={`${title}: ${legendNote ?? 'latest'} values`}>
          {legend.map((e) => (
            <li key={e.key} data-series={e.key} data-value={e.value ?? ''}>
              <span
                className={e.dashed ? 'chart-swatch chart-swatch-dashed' : 'chart-swatch'}
                style={{ borderColor: e.color, background: e.dashed ? 'transparent' : e.color }}
                aria-hidden="true"
              />
              {e.label} <strong>{e.text}</strong>
            </li>
          ))}
          {legendNote && (
            <li className="chart-legend-note muted" aria-hidden="true">
              ({legendNote})
            </li>
          )}
        </ul>
      )}
      {children}
    </figure>
  );
}
