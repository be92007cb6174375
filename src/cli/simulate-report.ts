/** `berth simulate`'s report as text: the figures of a scenario run (simulate/report.ts). */
import type { ScenarioReport } from '../simulate/report.js';
import { table } from './output.js';

/** Seconds with one decimal, or "n/a". */
export const seconds = (ms: number | null): string => (ms === null ? 'n/a' : `${(ms / 1000).toFixed(1)} s`);

/** A decision time: µs below a millisecond, else ms. */
export function decisionTime(ms: number | null): string {
  if (ms === null) return 'n/a';
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`;
}

/** `resource`: the scenario's resource, whose units · seconds the evictions lost. */
export function formatReport(r: ScenarioReport, resource = 'unit'): string {
  const lines = [
    `wall time: ${seconds(r.wallMs)} (${r.workloads} workloads${r.unfinished > 0 ? `, ${r.unfinished} unfinished` : ''})`,
    '',
    table(
      ['QUEUE CLASS', 'QUEUES', 'NOMINAL', 'AVG USAGE'],
      r.queueClasses.map((q) => [q.className, q.queues, q.nominal, `${q.usagePercent.toFixed(1)} %`]),
    ),
    '',
    table(
      ['WORKLOAD CLASS', 'COUNT', 'AVG TO ADMISSION', 'AVG TO FINISH', 'EVICTIONS', 'LOST TO EVICTIONS'],
      r.workloadClasses.map((w) => [
        w.className,
        w.count,
        seconds(w.avgTimeToAdmissionMs),
        seconds(w.avgTimeToFinishMs),
        w.evictions,
        `${w.evictedUnitSeconds.toFixed(1)} ${resource}·s`,
      ]),
    ),
    '',
    `lowest cluster-queue usage: ${r.lowestUsagePercent.toFixed(1)} % of nominal`,
    `admissions: ${r.admissions} (${r.admissionsPerSecond.toFixed(1)}/s)`,
    `p99 scheduler decision time: ${decisionTime(r.decisionP99Ms)}`,
  ];
  if (r.usageApproximated > 0) {
    lines.push(
      `note: for ${r.usageApproximated} evicted workloads only first admission → finish is known; their usage is overstated`,
    );
  }
  return lines.join('\n');
}
