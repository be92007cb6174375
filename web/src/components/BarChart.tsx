/**
 * A bar chart of one figure per category (uPlot's bars on a category axis): e.g. each project's
 * core·hours over a period. The categories are named under their bars; the value under the
 * cursor, else the largest, is in the legend, and `data-categories` / `data-values` on the figure
 * carry them all (the page shows them as a table too).
 */
import { useLayoutEffect, useMemo, useRef } from 'react';
import uPlot from 'uplot';
import { axis, ChartFrame, fromZero, tickValues, useUPlot, type LegendEntry } from './chart-base.js';

interface Props {
  id: string;
  title: string;
  /** The category axis's title: "project". */
  xLabel: string;
  /** The value axis's title with its unit: "cpu (core·h)". */
  yLabel: string;
  categories: string[];
  values: number[];
  color: string;
  format: (v: number) => string;
  height?: number;
  empty?: string;
}

export function BarChart({
  id,
  title,
  xLabel,
  yLabel,
  categories,
  values,
  color,
  format,
  height = 240,
  empty,
}: Props) {
  const names = useRef(categories);
  useLayoutEffect(() => {
    names.current = categories;
  });
  const data = useMemo<uPlot.AlignedData>(() => [values.map((_, i) => i), values], [values]);
  const { ref, cursor } = useUPlot(
    () => ({
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: {
        x: { time: false, range: (u) => [-0.5, Math.max(u.data[0].length, 1) - 0.5] },
        y: fromZero,
      },
      axes: [
        axis(xLabel, {
          grid: { show: false },
          splits: (u) => Array.from(u.data[0], (_, i) => i),
          values: (_u, splits) => splits.map((i) => names.current[i] ?? ''),
        }),
        axis(yLabel, { size: 60, values: tickValues }),
      ],
      series: [
        {},
        {
          label: yLabel,
          stroke: color,
          fill: color,
          width: 1,
          paths: uPlot.paths.bars?.({ size: [0.6, 80] }),
          points: { show: false },
        },
      ],
    }),
    data,
    JSON.stringify([xLabel, yLabel, color]),
    height,
  );

  const top = values.reduce((best, v, i) => (v > (values[best] ?? -Infinity) ? i : best), 0);
  const shown = cursor !== null && cursor < values.length ? cursor : values.length > 0 ? top : null;
  const legend: LegendEntry[] =
    shown === null
      ? []
      : [
          {
            key: categories[shown] ?? '',
            label: categories[shown] ?? '',
            color,
            value: values[shown] ?? null,
            text: format(values[shown] ?? 0),
          },
        ];
  const summary =
    values.length === 0
      ? `${title}: nothing to show`
      : `${title}: ${categories.map((c, i) => `${c} ${format(values[i] ?? 0)}`).join(', ')}.`;
  return (
    <ChartFrame
      id={id}
      title={title}
      summary={summary}
      points={values.length}
      plotRef={ref}
      legend={legend}
      empty={empty}
      legendNote={cursor !== null ? 'under the cursor' : 'the largest'}
      dataset={{ categories: categories.join(','), values: values.join(',') }}
    />
  );
}
