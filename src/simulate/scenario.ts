/**
 * A scheduler-performance scenario in the shape of Kueue's
 * (test/performance/scheduler/configs/*\/generator.yaml): cohorts of cluster queues, each queue
 * with sets of workloads created on a timer. `parseScenario` checks it, naming the bad key;
 * `expandScenario` turns it into the queues and the timed workloads the simulator and the real-run
 * driver both replay. Pure: no I/O.
 */
import { Type, type Static, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import {
  RECLAIM_WITHIN_COHORT,
  WITHIN_CLUSTER_QUEUE,
  JOBS_RESOURCE,
  type QueueingStrategy,
  type RuntimeEstimates,
  type ReclaimWithinCohort,
  type WithinClusterQueue,
} from '../domain/cluster-queue.js';
import { ConfigError } from '../domain/errors.js';
import { DNS_LABEL, DNS_LABEL_HELP, RESOURCE_NAME, RESOURCE_NAME_HELP } from '../domain/names.js';
import { PRIORITY_MAX, PRIORITY_MIN } from '../domain/priority-class.js';

const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });
/** One of `values`, checked by Value.Errors (unlike Type.Unsafe) and typed as their union. */
const literals = <T extends readonly string[]>(values: T) =>
  Type.Union(values.map((v) => Type.Literal(v))) as TUnion<TLiteral<T[number]>[]>;

const Count = Type.Integer({ minimum: 1 });
/** Amounts of the scenario's resource, in whole units (Kueue's configs use plain integers). */
const Units = Type.Integer({ minimum: 0 });

const WorkloadTemplate = strict({
  className: Type.String(),
  runtimeMs: Type.Integer({ minimum: 0 }),
  priority: Type.Optional(Type.Integer({ minimum: PRIORITY_MIN, maximum: PRIORITY_MAX })),
  request: Type.Integer({ minimum: 1 }),
});
const WorkloadsSet = strict({
  count: Type.Integer({ minimum: 0 }),
  creationIntervalMs: Type.Integer({ minimum: 0 }),
  workloads: Type.Array(WorkloadTemplate, { minItems: 1 }),
});
const QueuesSet = strict({
  className: Type.String(),
  count: Count,
  nominalQuota: Units,
  /** Max usage above nominal; absent: as much as the cohort can lend. */
  borrowingLimit: Type.Optional(Units),
  reclaimWithinCohort: Type.Optional(literals(RECLAIM_WITHIN_COHORT)),
  withinClusterQueue: Type.Optional(literals(WITHIN_CLUSTER_QUEUE)),
  workloadsSets: Type.Array(WorkloadsSet),
});
const CohortSet = strict({
  className: Type.String(),
  count: Count,
  queuesSets: Type.Array(QueuesSet, { minItems: 1 }),
});
export const ScenarioSchema = strict({
  /** The one resource the scenario's quotas and requests are in (default cpu). */
  resourceName: Type.Optional(Type.String()),
  cohorts: Type.Array(CohortSet, { minItems: 1 }),
});

export type Scenario = Static<typeof ScenarioSchema>;
export type QueuesSetConfig = Static<typeof QueuesSet>;

export interface PlannedQueue {
  name: string;
  cohort: string;
  /** The queue set's className: what usage is reported per. */
  className: string;
  /** In whole units of the scenario's resource. */
  nominal: number;
  borrowingLimit: number | null;
  reclaimWithinCohort: ReclaimWithinCohort;
  withinClusterQueue: WithinClusterQueue;
  /** Absent: BestEffortFIFO, as in Kueue's scenarios. */
  strategy?: QueueingStrategy;
  /** Backfill: what jobs are planned with (absent: requested). */
  estimates?: RuntimeEstimates;
  /** Backfill: how many reservations a pass keeps (absent: one, EASY). */
  reservations?: number;
}

export interface PlannedWorkload {
  /** 1-based, in order of `at`: serves as the simulator's job id. */
  seq: number;
  /** Kueue's workload name: `<className>-<set>-<round>-<template>`. */
  name: string;
  queue: string;
  cohort: string;
  queueClass: string;
  className: string;
  /** Index of its workloads set in its queue: the sets of a queue run on their own timers. */
  set: number;
  /** When it is created, in ms from the start of generation. */
  at: number;
  runtimeMs: number;
  priority: number;
  /** In whole units of the scenario's resource. */
  request: number;
  /** What the scheduler plans with (its timeout; it still runs `runtimeMs`); absent: none. */
  timeoutMs?: number;
}

export interface ExpandedScenario {
  resource: string;
  queues: PlannedQueue[];
  cohorts: string[];
  workloads: PlannedWorkload[];
}

export const DEFAULT_RESOURCE = 'cpu';

/** `/cohorts/0/queuesSets/1/count` → `cohorts[0].queuesSets[1].count` */
const keyOf = (path: string): string =>
  path
    .split('/')
    .filter((s) => s !== '')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((key, s) => (/^\d+$/.test(s) ? `${key}[${s}]` : key === '' ? s : `${key}.${s}`), '');

function schemaMessage(schema: TSchema, message: string): string {
  if (message.startsWith('Unexpected property')) return 'unknown key';
  if (message.startsWith('Expected required property')) return 'is required';
  const anyOf = (schema as { anyOf?: { const?: unknown }[] }).anyOf;
  if (anyOf?.every((s) => typeof s.const === 'string')) {
    return `must be one of ${anyOf.map((s) => String(s.const)).join(', ')}`;
  }
  return message.toLowerCase();
}

/**
 * Parses and checks a scenario. Throws ConfigError naming the offending key
 * (`cohorts[0].queuesSets[0].nominalQuota: expected integer`).
 */
export function parseScenario(yamlText: string, file?: string): Scenario {
  let raw: unknown;
  try {
    raw = parseYaml(yamlText) ?? {};
  } catch (e) {
    const detail = e instanceof YAMLParseError ? e.message.split('\n')[0] : String(e);
    throw new ConfigError('', `not valid YAML: ${detail}`, file);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError('', 'must be a mapping with a cohorts list', file);
  }
  // A misspelt key is also a missing one: name the misspelling, which is the mistake made.
  const errors = [...Value.Errors(ScenarioSchema, raw)];
  const first = errors.find((e) => e.message.startsWith('Unexpected property')) ?? errors[0];
  if (first) {
    throw new ConfigError(
      keyOf(first.path) || '(top level)',
      schemaMessage(first.schema, first.message),
      file,
    );
  }
  const cfg = raw as Scenario;
  checkNames(cfg, file);
  return cfg;
}

function checkLabel(key: string, value: string, file: string | undefined, makes?: string): void {
  if (DNS_LABEL.test(value)) return;
  const what = makes === undefined ? `"${value}"` : `makes ${makes} "${value}", which`;
  throw new ConfigError(key, `${what} ${DNS_LABEL_HELP}`, file);
}

/** Class names become parts of berth names; every generated queue name must be a distinct DNS label. */
function checkNames(cfg: Scenario, file: string | undefined): void {
  const resource = cfg.resourceName ?? DEFAULT_RESOURCE;
  if (!RESOURCE_NAME.test(resource)) {
    throw new ConfigError('resourceName', `"${resource}" ${RESOURCE_NAME_HELP}`, file);
  }
  if (resource === JOBS_RESOURCE) {
    throw new ConfigError('resourceName', 'jobs is implicit in every workload; name another resource', file);
  }
  const seen = new Set<string>();
  cfg.cohorts.forEach((c, ci) => {
    checkLabel(`cohorts[${ci}].className`, c.className, file);
    const lastCohort = `${c.className}-${c.count - 1}`;
    checkLabel(`cohorts[${ci}].className`, lastCohort, file, 'cohort name');
    c.queuesSets.forEach((qs, qi) => {
      const key = `cohorts[${ci}].queuesSets[${qi}]`;
      checkLabel(`${key}.className`, qs.className, file);
      // The longest name of the set: its last queue in its last cohort.
      const longest = queueName(qs, qi, qs.count - 1, lastCohort);
      checkLabel(`${key}.className`, longest, file, 'queue name');
      for (let k = 0; k < c.count; k++) {
        for (let i = 0; i < qs.count; i++) {
          const name = queueName(qs, qi, i, `${c.className}-${k}`);
          if (seen.has(name))
            throw new ConfigError(`${key}.className`, `queue ${name} is defined twice`, file);
          seen.add(name);
        }
      }
      qs.workloadsSets.forEach((ws, si) =>
        ws.workloads.forEach((w, wi) =>
          checkLabel(`${key}.workloadsSets[${si}].workloads[${wi}].className`, w.className, file),
        ),
      );
    });
  });
}

const queueName = (qs: QueuesSetConfig, setIdx: number, i: number, cohort: string): string =>
  `${qs.className}-${setIdx}-${i}-${cohort}`;

/**
 * Every queue and every workload of the scenario, as Kueue's generator makes them: per queue, each
 * workloads set runs on its own timer; a set makes `count` rounds, each creating its templates in
 * order, waiting `creationIntervalMs` before each creation (so the first is at +interval).
 * Workloads are sorted by creation time; ties keep the generation order.
 */
export function expandScenario(cfg: Scenario): ExpandedScenario {
  const queues: PlannedQueue[] = [];
  const cohorts: string[] = [];
  const workloads: Omit<PlannedWorkload, 'seq'>[] = [];
  for (const c of cfg.cohorts) {
    for (let k = 0; k < c.count; k++) {
      const cohort = `${c.className}-${k}`;
      if (!cohorts.includes(cohort)) cohorts.push(cohort);
      c.queuesSets.forEach((qs, qi) => {
        for (let i = 0; i < qs.count; i++) {
          const queue = queueName(qs, qi, i, cohort);
          queues.push({
            name: queue,
            cohort,
            className: qs.className,
            nominal: qs.nominalQuota,
            borrowingLimit: qs.borrowingLimit ?? null,
            reclaimWithinCohort: qs.reclaimWithinCohort ?? 'Never',
            withinClusterQueue: qs.withinClusterQueue ?? 'Never',
          });
          qs.workloadsSets.forEach((ws, set) => {
            let n = 0;
            for (let round = 0; round < ws.count; round++) {
              ws.workloads.forEach((t, ti) => {
                n++;
                workloads.push({
                  name: `${t.className}-${set}-${round}-${ti}`,
                  queue,
                  cohort,
                  queueClass: qs.className,
                  className: t.className,
                  set,
                  at: n * ws.creationIntervalMs,
                  runtimeMs: t.runtimeMs,
                  priority: t.priority ?? 0,
                  request: t.request,
                });
              });
            }
          });
        }
      });
    }
  }
  // Array.prototype.sort is stable: equal times keep the generation order.
  workloads.sort((a, b) => a.at - b.at);
  return {
    resource: cfg.resourceName ?? DEFAULT_RESOURCE,
    queues,
    cohorts,
    workloads: workloads.map((w, i) => ({ seq: i + 1, ...w })),
  };
}
