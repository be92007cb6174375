/**
 * A chart of figures over time (uPlot): lines, or bars (one per time bucket), on a time axis,
 * with a y axis from zero titled with its unit, and a legend of the latest values — or, while the
 * cursor is over the plot, the values at that time.
 */
import { useLayoutEffect, useMemo, useRef } from 'react';
import uPlot from 'uplot';
import { formatWhen } from '../format.js';
import {
  axis,
  ChartFrame,
  fromZero,
  tickValues,
  useUPlot,
  WHOLE_STEPS,
  type LegendEntry,
} from './chart-base.js';

export interface TimeSeries {
  /** Stable key (`data-series`). */
  key: string;
  label: string;
  color: string;
  values: (number | null)[];
  dashed?: boolean;
  /** Drawn as bars (one per time), else as a line. */
  bars?: boolean;
}

interface Props {
  /** `data-chart`, for tests. */
  id: string;
  title: string;
  /** The y axis's title, with its unit: "cpu (cores)". */
  yLabel: string;
  /** Epoch milliseconds, ascending; one per value of every series. */
  times: number[];
  series: TimeSeries[];
  /** A value as read in the legend: "1.5 cores". */
  format: (v: number) => string;
  /** Counts of whole things (jobs): ticks at whole numbers only. */
  whole?: boolean;
  height?: number;
  empty?: string;
  /** More `data-*` attributes of the figure, for tests. */
  dataset?: Record<string, string>;
  /** The time axis's span (epoch ms), when it is not that of `times` (bars need room at the ends). */
  span?: [number, number];
}

/** The last value that is not null. */
function lastValue(values: (number | null)[]): number | null {
  for (let i = values.length - 1; i >= 0; i--) {
    const v = values[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

export function TimeChart({
  id,
  title,
  yLabel,
  times,
  series,
  format,
  whole,
  height = 200,
  empty,
  dataset,
  span,
}: Props) {
  const spanRef = useRef(span);
  useLayoutEffect(() => {
    spanRef.current = span;
  });
  const data = useMemo<uPlot.AlignedData>(
    () => [times.map((t) => t / 1000), ...series.map((s) => s.values)],
    [times, series],
  );
  // What makes a new chart: the series drawn and how; their values only feed it.
  const shape = JSON.stringify([
    yLabel,
    whole,
    span !== undefined,
    series.map((s) => [s.key, s.label, s.color, s.dashed, s.bars]),
  ]);
  const { ref, cursor } = useUPlot(
    () => ({
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: {
          time: true,
          ...(span && {
            range: (_u, min, max): uPlot.Range.MinMax =>
              spanRef.current ? [spanRef.current[0] / 1000, spanRef.current[1] / 1000] : [min, max],
          }),
        },
        y: fromZero,
      },
      axes: [
        axis('time'),
        axis(yLabel, { size: 60, values: tickValues, ...(whole ? { incrs: WHOLE_STEPS } : {}) }),
      ],
      series: [
        {},
        ...series.map((s): uPlot.Series => ({
          label: s.label,
          stroke: s.color,
          width: s.bars ? 1 : 2,
          ...(s.dashed ? { dash: [6, 4] } : {}),
          ...(s.bars ? { fill: s.color, paths: uPlot.paths.bars?.({ size: [0.8, 40] }) } : {}),
          points: { show: false },
        })),
      ],
    }),
    data,
    shape,
    height,
  );

  const at = cursor !== null && cursor < times.length ? cursor : null;
  const legend: LegendEntry[] = series.map((s) => {
    const value = at === null ? lastValue(s.values) : (s.values[at] ?? null);
    return {
      key: s.key,
      label: s.label,
      color: s.color,
      dashed: s.dashed,
      value,
      text: value === null ? '–' : format(value),
    };
  });
  const latest = legend.map((e) => `${e.label} ${e.text}`).join(', ');
  const first = times[0];
  const last = times.at(-1);
  const summary =
    first === undefined || last === undefined
      ? `${title}: no samples yet`
      : `${title}, from ${formatWhen(new Date(first).toISOString())} to ${formatWhen(new Date(last).toISOString())}. Latest: ${latest}.`;
  const atTime = at === null ? undefined : times[at];
  return (
    <ChartFrame
      id={id}
      title={title}
      summary={summary}
      points={times.length}
      plotRef={ref}
      legend={legend}
      empty={empty}
      legendNote={atTime === undefined ? 'latest' : `at ${formatWhen(new Date(atTime).toISOString())}`}
      dataset={dataset}
    />
  );
}
