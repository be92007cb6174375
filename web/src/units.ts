/**
 * How the charts show a resource's amounts. The API gives them in base units (cpu in cores,
 * memory in bytes, anything else as counted); memory reads better in GiB.
 */
import { formatCount, formatNumber } from './format.js';

export interface ResourceUnit {
  /** What one unit is called on an axis: "cores", "GiB", "" (a plain count). */
  unit: string;
  /** Divides a base-unit amount into `unit`s. */
  divisor: number;
}

export function resourceUnit(resource: string): ResourceUnit {
  if (resource === 'cpu') return { unit: 'cores', divisor: 1 };
  // Kubernetes' byte-counted resources: memory, ephemeral-storage (and names that end so).
  if (/(memory|storage)$/.test(resource)) return { unit: 'GiB', divisor: 2 ** 30 };
  return { unit: '', divisor: 1 };
}

/** An axis title with its unit: "cpu (cores)", "jobs". */
export const axisLabel = (resource: string, unit: string): string =>
  unit ? `${resource} (${unit})` : resource;

/**
 * A figure as a chart's legend or table shows it: whole from 100 on ("1,234"), at most 2 decimals
 * from 1 on ("1.5"), and 2 significant digits below ("0.00083": a short job's core·hours).
 */
export function formatFigure(v: number): string {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 100) return formatCount(Math.round(v));
  if (a >= 1) return formatNumber(v);
  return String(Number(v.toPrecision(2)));
}

/** A figure and its unit: "1.5 cores", "2 GiB", "3". */
export const withUnit = (value: number, unit: string): string =>
  unit ? `${formatFigure(value)} ${unit}` : formatFigure(value);

/**
 * A resource's use over a period, as `GET /usage` gives it (cpu in core·hours, memory in
 * byte·hours), in the unit a chart shows: core·h, GiB·h, or the resource's own unit·h.
 */
export function hoursUnit(resource: string): ResourceUnit {
  const base = resourceUnit(resource);
  if (resource === 'cpu') return { unit: 'core·h', divisor: 1 };
  return { unit: `${base.unit || resource}·h`, divisor: base.divisor };
}
