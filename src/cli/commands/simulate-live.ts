/**
 * `berth simulate --from-server`: the live what-if. Reads what the leader's start-time estimates
 * forecast from, makes the change the flags ask for, and replays both (simulate/what-if.ts):
 * when would the pending jobs start, as things are and with the change.
 */
import { formatSpan } from '../duration.js';
import { UsageError } from '../errors.js';
import { table } from '../output.js';
import { openSession, type CommonFlags } from '../session.js';

export interface LiveFlags extends CommonFlags {
  quota?: string[];
  borrowingLimit?: string[];
  weight?: string[];
  cohort?: string[];
  /** Pending jobs listed at most. */
  limit: number;
}

/** Repeatable flag values, collected as given. */
export const collect = (value: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  value,
];

/** `QUEUE:RESOURCE=AMOUNT` (e.g. `default:cpu=16`). */
function queueAmount(flag: string, value: string) {
  const m = /^\s*([^:=\s]+)\s*:\s*([^=\s]+)\s*=\s*(\S+)\s*$/.exec(value);
  if (!m) throw new UsageError(`${flag} ${value}: expected QUEUE:RESOURCE=AMOUNT, e.g. default:cpu=16`);
  return { queue: m[1]!, resource: m[2]!, amount: m[3]! };
}

/** `NAME=VALUE` pairs of a repeatable flag. */
function pairs(flag: string, values: string[] | undefined, example: string): [string, string][] {
  return (values ?? []).map((v) => {
    const m = /^\s*([^=\s]+)\s*=\s*(\S*)\s*$/.exec(v);
    if (!m) throw new UsageError(`${flag} ${v}: expected ${example}`);
    return [m[1]!, m[2]!];
  });
}

function weights(values: string[] | undefined): Record<string, number> {
  return Object.fromEntries(
    pairs('--weight', values, 'PROJECT=WEIGHT, e.g. ml=2').map(([p, w]) => {
      const n = Number(w);
      if (!(n > 0) || !Number.isFinite(n))
        throw new UsageError(`--weight ${p}=${w}: the weight must be a number greater than 0`);
      return [p, n];
    }),
  );
}

/** "in 5m", "now", or "-" (not within the forecast's horizon). */
const startText = (at: number | null, now: number): string =>
  at === null ? '-' : at <= now ? 'now' : `in ${formatSpan(at - now, 2)}`;

const spanText = (ms: number | null): string => (ms === null ? '-' : formatSpan(ms, 2));

export async function runLiveWhatIf(f: LiveFlags): Promise<void> {
  const { whatIf } = await import('../../simulate/what-if.js');
  type Input = Parameters<typeof whatIf>[0];
  const change = {
    quota: (f.quota ?? []).map((v) => queueAmount('--quota', v)),
    borrowingLimit: (f.borrowingLimit ?? []).map((v) => queueAmount('--borrowing-limit', v)),
    weight: weights(f.weight),
    cohort: Object.fromEntries(
      pairs('--cohort', f.cohort, 'QUEUE=COHORT, e.g. gpu=shared (QUEUE= for none)').map(([q, c]) => [
        q,
        c === '' ? null : c,
      ]),
    ),
  };
  const s = openSession(f);
  const input = await s.client.get<Input>('/scheduler/forecast-input');
  const report = whatIf(input, change);
  const described = [
    ...change.quota.map((c) => `quota ${c.queue}:${c.resource}=${c.amount}`),
    ...change.borrowingLimit.map((c) => `borrowing limit ${c.queue}:${c.resource}=${c.amount}`),
    ...Object.entries(change.weight).map(([p, w]) => `weight ${p}=${w}`),
    ...Object.entries(change.cohort).map(([q, c]) => `cohort ${q}=${c ?? '(none)'}`),
  ];
  s.show({ change, ...report }, () => {
    const now = report.at;
    const moved = report.jobs.filter((j) => j.now !== j.changed).length;
    const lines = [
      `what if ${described.length > 0 ? described.join(', ') : '(no change)'}: ${report.jobs.length} pending jobs replayed on the scheduler from the server's state (${input.admitted.length} holding quota, ${input.projected?.length ?? 0} arrivals projected from the recent past)`,
      '',
      table(
        [
          'QUEUE',
          'PENDING',
          'STARTING',
          'MEDIAN WAIT',
          'MEAN WAIT',
          '→ STARTING',
          '→ MEDIAN WAIT',
          '→ MEAN WAIT',
        ],
        report.queues.map((q) => [
          q.queue,
          q.pending,
          q.now.starting,
          spanText(q.now.medianMs),
          spanText(q.now.meanMs),
          q.changed.starting,
          spanText(q.changed.medianMs),
          spanText(q.changed.meanMs),
        ]),
      ).trimEnd(),
    ];
    if (report.jobs.length > 0) {
      const shown = [...report.jobs]
        .sort((a, b) => Math.abs(delta(b)) - Math.abs(delta(a)) || a.id - b.id)
        .slice(0, f.limit);
      lines.push(
        '',
        `${moved} of ${report.jobs.length} jobs would start at another time${shown.length < report.jobs.length ? `; the ${shown.length} that move most:` : ':'}`,
        table(
          ['ID', 'PROJECT', 'QUEUE', 'PRIORITY', 'STARTS', 'WITH THE CHANGE'],
          shown.map((j) => [
            j.id,
            j.project,
            j.queue,
            j.priority,
            startText(j.now, now),
            startText(j.changed, now),
          ]),
        ).trimEnd(),
      );
    }
    lines.push(
      '',
      'Forecasts, not promises: runtimes are expected from similar jobs, timeouts or the queue (berth status JOB says how), and work yet to come is taken to arrive as it did of late.',
    );
    return lines.join('\n');
  });
}

/** How far the change moves a job's start (a job that no longer starts moves furthest). */
function delta(j: { now: number | null; changed: number | null }): number {
  if (j.now === j.changed) return 0;
  if (j.now === null || j.changed === null) return Infinity;
  return j.changed - j.now;
}
