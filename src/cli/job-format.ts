/** Jobs for people: the `berth jobs` table and the `berth status` block. */
import { devicesText } from '../domain/devices.js';
import type { ArraySummary } from '../domain/job-array.js';
import { JOB_STATES } from '../domain/job.js';
import { formatAmount } from '../domain/quantity.js';
import { personTime, timesForPerson } from '../domain/reason-times.js';
import type { Job, JobEvent } from './api-types.js';
import { formatSpan, span } from './duration.js';
import { fields, quantities, table } from './output.js';

/** Words a POSIX shell reads back as the same argv, quoted only where needed. */
export const shellWords = (argv: string[]): string =>
  argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');

/** `14:02:37 (5m3s ago)`, `Nov 24 09:15:02` in the reader's zone; null stays null (shown as `-`). */
const when = (iso: string | null, now: number): string | null =>
  iso === null ? null : personTime(Date.parse(iso), now, { seconds: true });

/** How long it ran (so far): `5m3s`, or undefined when it never started. */
function runTime(job: Job, now: number): string | undefined {
  const ms = span(job.startedAt, job.finishedAt, now);
  return ms === undefined ? undefined : formatSpan(ms, 2);
}

/** "1,000 tasks: 12 running, 50 queued, 938 succeeded": an array's tasks by state, none left out. */
export function arrayCounts(a: ArraySummary): string {
  const parts = JOB_STATES.filter((s) => a.counts[s] > 0).map(
    (s) => `${a.counts[s].toLocaleString('en')} ${s}`,
  );
  return `${count(a.size, 'task')}: ${parts.join(', ')}`;
}

export function jobTable(jobs: Job[], now: number, width?: number): string {
  return table(
    ['ID', 'NAME', 'STATE', 'EXIT', 'AGE', 'DURATION', 'REASON'],
    jobs.map((j) =>
      j.array
        ? [
            // As squeue shows an array: its id and its indices.
            `${j.id}_[${j.array.spec}]`,
            j.name,
            j.array.state,
            null,
            formatSpan(now - Date.parse(j.createdAt)),
            null,
            arrayCounts(j.array),
          ]
        : [
            j.arrayId === null ? j.id : `${j.id} (${j.arrayId}_${j.arrayIndex})`,
            j.name,
            j.state,
            j.exitCode,
            formatSpan(now - Date.parse(j.createdAt)),
            runTime(j, now),
            timesForPerson(j.reason, now),
          ],
    ),
    width,
  );
}

type Blocker = Job['blockers'][number];

const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;

/** One blocker in words: what is short, where, and by how much (a time as for a person at `now`). */
export function describeBlocker(b: Blocker, now: number): string {
  switch (b.kind) {
    case 'quota': {
      const f = (x: number) => formatAmount(b.resource, x);
      return (
        `${b.resource} in queue ${b.queue}: needs ${f(b.requested)}, ${f(b.available)} free ` +
        `(${f(b.used)} of ${f(b.limit)} in use); short by ${f(b.requested - b.available)}`
      );
    }
    case 'cohort': {
      const f = (x: number) => formatAmount(b.resource, x);
      return (
        `${b.resource} in cohort ${b.cohort}: needs ${f(b.requested)}, ${f(b.available)} free to borrow; ` +
        `short by ${f(b.requested - b.available)}`
      );
    }
    case 'hold':
      return b.stopPolicy === 'HoldAndDrain'
        ? `queue ${b.queue} is on hold and draining: it admits nothing until resumed (berth queue resume ${b.queue})`
        : `queue ${b.queue} is on hold: it admits nothing until resumed (berth queue resume ${b.queue})`;
    case 'queue-missing':
      return `cluster queue ${b.queue} does not exist`;
    case 'ahead':
      return `${count(b.jobsAhead, 'job')} ahead in queue ${b.queue}`;
    case 'preemption':
      return `waiting for preempted ${b.victims.length === 1 ? 'job' : 'jobs'} ${b.victims.join(', ')} to stop`;
    case 'privilege':
      return `project ${b.project} no longer holds privilege ${b.privilege} (berth project grant ${b.project} ${b.privilege})`;
    case 'worker':
      return `worker ${b.worker}: ${b.reason}`;
    case 'reservation':
      return `job ${b.job} reserved to start at ${personTime(Date.parse(b.startAt), now)}: ${Object.entries(
        b.requests,
      )
        .map(([r, x]) => `${r} ${x}`)
        .join(', ')} of queue ${b.queue} (backfill)`;
  }
}

/**
 * Its place among its project's jobs and what blocks it: while it waits in its queue, or —
 * admitted — while its worker waits to start (in Slurm's queue).
 */
function queueLines(job: Job, now: number): [string, number | string | null | string[]][] {
  if (job.state === 'admitted' && (job.blockers ?? []).length > 0)
    return [['blocked by', (job.blockers ?? []).map((b) => describeBlocker(b, now))]];
  if (job.state !== 'queued') return [];
  return [
    ['position in project', job.projectPosition ?? null],
    // An older server sends no estimate.
    [
      'estimated start',
      (job.estimate ?? null) === null ? null : (startsIn(job.estimatedStartAt, now) ?? 'none'),
    ],
    ['how estimated', job.estimate ?? null],
    // An older server sends no blockers.
    ['blocked by', (job.blockers ?? []).map((b) => describeBlocker(b, now))],
  ];
}

/** "1 of 3 used (own failures), 0 of 2 (infrastructure); backoff 10s", or null without retries. */
/** "15:02 (in 12m5s)" in the reader's zone, "now", or null without an estimate. */
export function startsIn(iso: string | null | undefined, now: number): string | null {
  if (iso === null || iso === undefined) return null;
  const at = Date.parse(iso);
  return at <= now ? 'now' : personTime(at, now);
}

function retryLine(job: Job): string | null {
  if (job.retries === 0 && job.infraRetries === 0) return null;
  const backoff = formatSpan(job.retryBackoffSeconds * 1000, 2);
  return `${job.retried} of ${job.retries} used (own failures), ${job.infraRetried} of ${job.infraRetries} (infrastructure); backoff ${backoff}`;
}

export function describeJob(job: Job, timeline: JobEvent[], now: number): string {
  const ran = runTime(job, now);
  return fields([
    ['id', job.id],
    ['name', job.name],
    ['project', job.project],
    ['state', job.state],
    ['reason', timesForPerson(job.reason, now)],
    ['position', job.position],
    ...queueLines(job, now),
    ['exit code', job.exitCode],
    ['cluster queue', job.clusterQueue],
    ['target', job.target],
    ['priority', job.priorityClass ? `${job.priority} (${job.priorityClass})` : job.priority],
    [
      'requests',
      job.workers > 1 && Object.keys(job.requests).length > 0
        ? `${quantities(job.requests)} per worker`
        : quantities(job.requests),
    ],
    [
      'array',
      job.arrayId === null
        ? null
        : `task ${job.arrayIndex} of array ${job.arrayId} (its tasks: berth jobs --array ${job.arrayId})`,
    ],
    ['workers', job.workers > 1 ? `${job.workers} (a gang: ranks 0–${job.workers - 1})` : null],
    ['resources', job.resources.map((r) => `${r.type}${r.id === null ? '' : ` #${r.id}`} (${r.state})`)],
    ['worker', job.worker && `#${job.worker.id} (${job.worker.state})`],
    ['devices', job.worker?.devices ? devicesText(job.worker.devices) : null],
    ['command', job.command.length === 0 && job.image !== null ? "the image's own" : shellWords(job.command)],
    [
      'image',
      job.image === null
        ? null
        : `${job.image}${job.imageDigest === null ? ' (its digest: once admitted)' : ` @ ${job.imageDigest}`}`,
    ],
    [
      'depends on',
      [
        ...job.dependsOn.map(String),
        ...job.dependsOnAny.map((d) => `${d} (any end)`),
        ...job.dependsOnFailed.map((d) => `${d} (failure)`),
      ].join(', '),
    ],
    ['interactive', job.interactive ? `yes: a terminal to attach to (berth attach ${job.id})` : null],
    ['timeout', job.timeoutSeconds === null ? null : formatSpan(job.timeoutSeconds * 1000, 2)],
    ['retries', retryLine(job)],
    [
      'attempt',
      job.attempts === 0 ? null : `${job.attempts + 1} (each one's output: berth logs --attempt K ${job.id})`,
    ],
    ['created', when(job.createdAt, now)],
    ['admitted', when(job.admittedAt, now)],
    ['started', when(job.startedAt, now)],
    ['finished', when(job.finishedAt, now)],
    ['duration', ran === undefined ? null : ran + (job.finishedAt === null ? ' so far' : '')],
    [
      'timeline',
      timeline.length === 0
        ? []
        : table(
            ['TIME', 'TYPE', 'MESSAGE'],
            timeline.map((e) => [
              personTime(Date.parse(e.at), now, { seconds: true, relative: false }),
              e.type,
              e.message,
            ]),
          ).split('\n'),
    ],
  ]);
}
