/**
 * `npm run bench -- estimates` (issue #16): how close start-time estimates come, in Kueue's
 * baseline scenario (bench/kueue/baseline.yaml). The scenario is simulated on berth's scheduler;
 * at each submission the job's start is estimated as the server does it (a forecast from the
 * present with runtimes learnt from finished jobs: src/simulate/estimate-accuracy.ts), then
 * compared with the admission the simulation finds. Three estimators in the same run: the
 * forecast from the present alone (the baseline), with the recent arrivals taken to repeat (up to
 * 2,000 projected jobs), and the same within the server's time budget per forecast. Per class: median and p90 absolute
 * error, the median signed error (< 0: early), the median real wait, and the cost per forecast.
 */
import { readFileSync } from 'node:fs';
import { FORECAST_BUDGET_MS } from '../src/controller/start-estimates.js';
import {
  measureEstimates,
  type AccuracyOptions,
  type EstimateAccuracy,
} from '../src/simulate/estimate-accuracy.js';
import { expandScenario, parseScenario } from '../src/simulate/scenario.js';
import { SCENARIOS } from './kueue.js';
import { fmt } from './lib.js';

export interface EstimatesRun {
  name: string;
  result: EstimateAccuracy;
}

const ESTIMATORS: (AccuracyOptions & { name: string })[] = [
  { name: 'present only', arrivalWindowMs: 0, maxProjected: 0 },
  { name: 'recent arrivals repeated, ≤ 2,000', arrivalWindowMs: 60_000, maxProjected: 2_000 },
  {
    name: `the server: ≤ 2,000 projected, ${FORECAST_BUDGET_MS} ms a forecast`,
    arrivalWindowMs: 60_000,
    maxProjected: 2_000,
    budgetMs: FORECAST_BUDGET_MS,
  },
];

export function runEstimatesBench(file = SCENARIOS.kueue): EstimatesRun[] {
  const plan = expandScenario(parseScenario(readFileSync(file, 'utf8'), file));
  return ESTIMATORS.map((e) => ({ name: e.name, result: measureEstimates(plan, e) }));
}

const s = (ms: number) => `${fmt(ms / 1000, 1)} s`;

export function printEstimatesBench(runs: EstimatesRun[]): void {
  const base = runs[0];
  for (const run of runs) {
    console.log(
      `  ${run.name}: ${fmt(run.result.forecasts)} forecasts, ${fmt(run.result.forecastMs, 1)} ms each`,
    );
    for (const c of run.result.classes) {
      const b = base?.result.classes.find((x) => x.className === c.className);
      const ratio =
        b && b.medianAbsErrorMs > 0
          ? ` (${fmt(c.medianAbsErrorMs / b.medianAbsErrorMs, 2)}× the present-only median)`
          : '';
      console.log(
        `    ${c.className.padEnd(7)} n=${fmt(c.estimated)}${c.unestimated ? ` (+${fmt(c.unestimated)} without)` : ''}: |error| median ${s(c.medianAbsErrorMs)}, p90 ${s(c.p90AbsErrorMs)}; signed median ${s(c.medianErrorMs)}; real wait median ${s(c.medianWaitMs)}${ratio}`,
      );
    }
  }
}
