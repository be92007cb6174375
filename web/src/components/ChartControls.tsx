/** The controls above a page of charts: which period, and which resource when there are several. */
import { useId } from 'react';

export interface PeriodOption<T extends string | number> {
  value: T;
  label: string;
}

/** The resource a chart shows: the one chosen while it is there, else cpu, else the first. */
export function pickResource(resources: string[], chosen: string | null): string | undefined {
  if (chosen !== null && resources.includes(chosen)) return chosen;
  return resources.includes('cpu') ? 'cpu' : resources[0];
}

interface Props<T extends string | number> {
  periods: PeriodOption<T>[];
  period: T;
  onPeriod: (value: T) => void;
  resources: string[];
  resource: string | undefined;
  onResource: (resource: string) => void;
  /** Shows the resource selector from this many resources on (default 2: a choice to make). */
  minResources?: number;
}

export function ChartControls<T extends string | number>({
  periods,
  period,
  onPeriod,
  resources,
  resource,
  onResource,
  minResources = 2,
}: Props<T>) {
  const periodId = useId();
  const resourceId = useId();
  return (
    <div className="chart-controls">
      <label htmlFor={periodId}>Period</label>
      <select
        id={periodId}
        value={period}
        onChange={(e) => {
          const p = periods.find((o) => String(o.value) === e.target.value);
          if (p) onPeriod(p.value);
        }}
      >
        {periods.map((p) => (
          <option key={p.value} value={p.value}>
            {p.label}
          </option>
        ))}
      </select>
      {resources.length >= minResources && (
        <>
          <label htmlFor={resourceId}>Resource</label>
          <select id={resourceId} value={resource} onChange={(e) => onResource(e.target.value)}>
            {resources.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </>
      )}
    </div>
  );
}
