/**
 * The real run side by side with Kueue's published baseline figures and with `berth simulate` on
 * the same scenario, and the targets of issue #7 checked.
 */
import { table, type Cell } from '../../src/cli/output.js';
import type { ScenarioReport } from '../../src/simulate/report.js';

/** Kueue's published figures for its baseline scenario (seconds and %). */
export const KUEUE_BASELINE = {
  wallSeconds: 351,
  lowestUsagePercent: 58.7,
  timeToAdmissionSeconds: { large: 6.7, medium: 76.8, small: 215.5 } as Record<string, number>,
};

/** Targets for berth's real run of the baseline. */
export const TARGETS = { wallSeconds: 120, lowestUsagePercent: 80 };

export interface Column {
  title: string;
  report: ScenarioReport;
}

type Figure = (r: ScenarioReport) => number | null;

const s = (ms: number | null) => (ms === null ? null : ms / 1000);
const workloadClass = (r: ScenarioReport, name: string) =>
  r.workloadClasses.find((c) => c.className === name);

function rows(report: ScenarioReport): { label: string; unit: string; kueue: number | null; get: Figure }[] {
  const classes = report.workloadClasses.map((c) => c.className);
  return [
    { label: 'wall time', unit: 's', kueue: KUEUE_BASELINE.wallSeconds, get: (r) => s(r.wallMs) },
    {
      label: 'lowest queue-class usage',
      unit: '%',
      kueue: KUEUE_BASELINE.lowestUsagePercent,
      get: (r) => r.lowestUsagePercent,
    },
    ...classes.map((c) => ({
      label: `${c}: avg time to admission`,
      unit: 's',
      kueue: KUEUE_BASELINE.timeToAdmissionSeconds[c] ?? null,
      get: (r: ScenarioReport) => s(workloadClass(r, c)?.avgTimeToAdmissionMs ?? null),
    })),
    ...classes.map((c) => ({
      label: `${c}: avg time to finish`,
      unit: 's',
      kueue: null,
      get: (r: ScenarioReport) => s(workloadClass(r, c)?.avgTimeToFinishMs ?? null),
    })),
    ...classes.map((c) => ({
      label: `${c}: evictions`,
      unit: '',
      kueue: null,
      get: (r: ScenarioReport) => workloadClass(r, c)?.evictions ?? null,
    })),
    ...classes.map((c) => ({
      label: `${c}: cpu·s lost to evictions`,
      unit: '',
      kueue: null,
      get: (r: ScenarioReport) => workloadClass(r, c)?.evictedUnitSeconds ?? null,
    })),
    { label: 'admissions/s', unit: '', kueue: null, get: (r) => r.admissionsPerSecond },
  ];
}

const num = (v: number | null, unit: string): string =>
  v === null
    ? '-'
    : `${unit === '' && Number.isInteger(v) ? v : v.toFixed(1)}${unit === '' ? '' : ` ${unit}`}`;

/** `other` relative to `base`, in %; absolute when base is 0. */
function diff(other: number | null, base: number | null, unit: string): string {
  if (other === null || base === null) return '-';
  if (base === 0) return other === 0 ? '0 %' : `${other > 0 ? '+' : ''}${num(other, unit)}`;
  const pct = (100 * (other - base)) / Math.abs(base);
  return `${pct >= 0 ? '+' : ''}${pct.toFixed(1)} %`;
}

/**
 * METRIC | KUEUE (when `withKueue`) | the real run | each simulation and its difference from the
 * real run in %.
 */
export function sideBySide(real: Column, simulations: Column[], withKueue: boolean): string {
  const headers = [
    'METRIC',
    ...(withKueue ? ['KUEUE'] : []),
    real.title,
    ...simulations.flatMap((c) => [c.title, 'VS REAL']),
  ];
  const body: Cell[][] = rows(real.report).map((row) => {
    const base = row.get(real.report);
    return [
      row.label,
      ...(withKueue ? [num(row.kueue, row.unit)] : []),
      num(base, row.unit),
      ...simulations.flatMap((c) => {
        const v = row.get(c.report);
        return [num(v, row.unit), diff(v, base, row.unit)];
      }),
    ];
  });
  return table(headers, body);
}

/** One line per target of issue #7: met or not. */
export function targets(real: ScenarioReport): string[] {
  const mark = (ok: boolean) => (ok ? 'met' : 'NOT MET');
  const wall = real.wallMs / 1000;
  const lines = [
    `wall ≤ ${TARGETS.wallSeconds} s: ${wall.toFixed(1)} s — ${mark(wall <= TARGETS.wallSeconds)}`,
    `lowest usage ≥ ${TARGETS.lowestUsagePercent} %: ${real.lowestUsagePercent.toFixed(1)} % — ${mark(real.lowestUsagePercent >= TARGETS.lowestUsagePercent)}`,
  ];
  for (const [c, kueue] of Object.entries(KUEUE_BASELINE.timeToAdmissionSeconds)) {
    const ours = s(workloadClass(real, c)?.avgTimeToAdmissionMs ?? null);
    lines.push(
      `${c}: avg time to admission below Kueue's ${kueue} s: ${ours === null ? 'n/a' : `${ours.toFixed(1)} s`} — ${mark(ours !== null && ours < kueue)}`,
    );
  }
  return lines;
}
