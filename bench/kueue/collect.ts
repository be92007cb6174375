/**
 * After the run: every job's times from the API, turned into the report's workload records. A job
 * evicted at least once (`attempts` > 0) has its timeline read too, for its first admission and
 * each interval it held quota; the others held quota from `admittedAt` to `finishedAt`.
 *
 * A workload counts as created when the server recorded it (the job's `createdAt`; server and
 * load generator share the machine's clock), as Kueue's recorder counts from the first watch event
 * of a workload, i.e. once the API server has it. The time a submission waited in this process
 * for a connection is the generator's lag, reported apart: with Kueue's large-scale scenario
 * (60,000 workloads planned within 0.6 s) it is seconds, and says nothing of the scheduler.
 */
import { pool } from '../lib.js';
import type { WorkloadRecord } from '../../src/simulate/report.js';
import { getJson } from './http.js';
import type { PlannedWorkload } from '../../src/simulate/scenario.js';
import type { Submitted } from './submit.js';

interface JobView {
  id: number;
  state: string;
  attempts: number;
  createdAt: string;
  admittedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
}

interface EventView {
  at: string;
  type: string;
}

export interface Collected {
  records: WorkloadRecord[];
  /** Each submitted workload and when the server recorded it. */
  arrivals: { plan: PlannedWorkload; createdAt: number }[];
  /** How far behind its planned time each workload was recorded: mean and max, ms. */
  lagMs: { mean: number; max: number };
  /** Admit decisions, re-admissions included. */
  admissions: number;
  /** Jobs that did not succeed (state → count). */
  notSucceeded: Record<string, number>;
  /**
   * What the server's pipeline adds to a run, to calibrate `berth simulate --admission-latency`
   * with: (finished − admitted − runtime) over jobs never evicted, averaged weighted by request,
   * so that the quota-time it adds is what the real run lost. (Small jobs come in large batches
   * and wait longer in the pipeline; a plain mean would charge their wait to the large ones.)
   */
  pipelineLatencyMs: number;
  /** The same per workload class, split into admitted → started and the rest. */
  latencyByClass: Record<string, { admitToStartMs: number; restMs: number; jobs: number }>;
}

const ms = (iso: string | null): number | null => (iso === null ? null : Date.parse(iso));
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled']);

async function projectJobs(api: string, token: string, project: string): Promise<JobView[]> {
  const all: JobView[] = [];
  for (let before: number | undefined; ;) {
    const page = await getJson<JobView[]>(
      api,
      token,
      `/projects/${project}/jobs?limit=1000${before === undefined ? '' : `&before=${before}`}`,
    );
    all.push(...page);
    if (page.length < 1000) return all;
    before = Math.min(...page.map((j) => j.id));
  }
}

/** First admission, and each [admitted, requeued or ended] interval, from a job's timeline. */
export function runsOf(events: EventView[]): {
  firstAdmit: number | null;
  admits: number;
  runs: [number, number][];
} {
  let firstAdmit: number | null = null;
  let admits = 0;
  let since: number | null = null;
  const runs: [number, number][] = [];
  for (const e of events) {
    const at = Date.parse(e.at);
    if (e.type === 'admitted') {
      firstAdmit ??= at;
      admits++;
      since = at;
    } else if (since !== null && (e.type === 'requeued' || TERMINAL.has(e.type))) {
      runs.push([since, at]);
      since = null;
    }
  }
  return { firstAdmit, admits, runs };
}

export async function collect(
  api: string,
  token: string,
  projects: string[],
  submitted: Map<number, Submitted>,
  start: number,
): Promise<Collected> {
  const views: JobView[] = [];
  await pool(projects.length, 8, async (i) => {
    views.push(...(await projectJobs(api, token, projects[i]!)));
  });
  const records: WorkloadRecord[] = [];
  const arrivals: Collected['arrivals'] = [];
  let lagSum = 0;
  let lagMax = 0;
  const notSucceeded: Record<string, number> = {};
  let admissions = 0;
  let latencySum = 0;
  let latencyWeight = 0;
  const byClass: Collected['latencyByClass'] = {};
  const evicted: { view: JobView; record: WorkloadRecord }[] = [];
  for (const v of views) {
    const s = submitted.get(v.id);
    if (s === undefined) continue;
    if (v.state !== 'succeeded') notSucceeded[v.state] = (notSucceeded[v.state] ?? 0) + 1;
    const createdAt = Date.parse(v.createdAt);
    arrivals.push({ plan: s.plan, createdAt });
    const lag = createdAt - (start + s.plan.at);
    lagSum += lag;
    lagMax = Math.max(lagMax, lag);
    const record: WorkloadRecord = {
      className: s.plan.className,
      queue: s.plan.queue,
      request: s.plan.request,
      createdAt,
      admittedAt: ms(v.admittedAt),
      finishedAt: ms(v.finishedAt),
      evictions: v.attempts,
    };
    records.push(record);
    if (v.attempts > 0) evicted.push({ view: v, record });
    else if (record.admittedAt !== null) {
      admissions++;
      const started = ms(v.startedAt);
      if (record.finishedAt !== null && started !== null) {
        const latency = record.finishedAt - record.admittedAt - s.plan.runtimeMs;
        latencySum += latency * s.plan.request;
        latencyWeight += s.plan.request;
        const c = (byClass[s.plan.className] ??= { admitToStartMs: 0, restMs: 0, jobs: 0 });
        c.admitToStartMs += started - record.admittedAt;
        c.restMs += record.finishedAt - started - s.plan.runtimeMs;
        c.jobs++;
      }
    }
  }
  await pool(evicted.length, 16, async (i) => {
    const { view, record } = evicted[i]!;
    const { firstAdmit, admits, runs } = runsOf(
      await getJson<EventView[]>(api, token, `/jobs/${view.id}/events`),
    );
    record.admittedAt = firstAdmit;
    record.runs = runs;
    admissions += admits;
  });
  return {
    records,
    arrivals,
    lagMs: { mean: arrivals.length === 0 ? 0 : lagSum / arrivals.length, max: lagMax },
    admissions,
    notSucceeded,
    pipelineLatencyMs: latencyWeight === 0 ? 0 : latencySum / latencyWeight,
    latencyByClass: Object.fromEntries(
      Object.entries(byClass).map(([k, c]) => [
        k,
        { admitToStartMs: c.admitToStartMs / c.jobs, restMs: c.restMs / c.jobs, jobs: c.jobs },
      ]),
    ),
  };
}
