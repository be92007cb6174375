/** `berth queue pending|hold|drain|resume`: a queue's backlog, and stopping and resuming it. */
import { Option, type Command } from 'commander';
import type { StopPolicy } from '../../domain/cluster-queue.js';
import type { ClusterQueueView, PendingEntry } from '../api-types.js';
import { apiPath } from '../client.js';
import { formatSpan } from '../duration.js';
import { nonNegativeInteger, positiveInteger } from '../flags.js';
import { table, type Cell } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

interface PendingFlags extends CommonFlags {
  limit: number;
  offset: number;
}

const DEFAULT_LIMIT = 50;

const queuePath = (name: string) => apiPath`/cluster-queues/${name}`;

/** "12m", "now", or null: the estimate's time from now, short. */
function startCell(e: PendingEntry, now: number): string | null {
  if ((e.estimatedStartAt ?? null) === null) return null;
  const ms = Date.parse(e.estimatedStartAt!) - now;
  return ms <= 0 ? 'now' : `~${formatSpan(ms)}`;
}

function pendingRow(e: PendingEntry, now: number): Cell[] {
  if ('hidden' in e) return [e.position, null, '(another project)', null, null, null, startCell(e, now)];
  return [
    e.position,
    e.id,
    e.project,
    e.name,
    e.priority,
    formatSpan(now - Date.parse(e.createdAt)),
    startCell(e, now),
  ];
}

/** What each stop policy means for the queue, in words. */
const POLICY_EFFECT: Record<StopPolicy, string> = {
  None: 'admitting jobs again',
  Hold: 'admits no new jobs; admitted and running jobs carry on',
  HoldAndDrain: 'admits no new jobs and sends its admitted and running jobs back to the queue',
};

const STOP_COMMANDS: [command: string, policy: StopPolicy, description: string][] = [
  ['hold', 'Hold', 'stop admitting new jobs; running ones carry on (admin)'],
  ['drain', 'HoldAndDrain', 'stop admitting and requeue admitted and running jobs (admin)'],
  ['resume', 'None', 'admit jobs again after hold or drain (admin)'],
];

export function registerQueueControlCommands(queue: Command): void {
  examples(
    clientCommand(
      queue,
      'pending <name>',
      "pending jobs in admission order (others' jobs are counted, not shown)",
    )
      .addOption(
        new Option('--limit <n>', 'how many to show').argParser(positiveInteger).default(DEFAULT_LIMIT),
      )
      .addOption(new Option('--offset <n>', 'skip the first n').argParser(nonNegativeInteger).default(0)),
    ['berth queue pending default', 'berth queue pending default --limit 10 --offset 10'],
  ).action(async (name: string, f: PendingFlags) => {
    const s = openSession(f);
    const [entries, q] = await Promise.all([
      s.client.get<PendingEntry[]>(`${queuePath(name)}/pending`, {
        query: { offset: f.offset, limit: f.limit },
      }),
      s.client.get<ClusterQueueView>(queuePath(name)),
    ]);
    const now = Date.now();
    s.show(entries, () =>
      entries.length === 0
        ? `no pending jobs in cluster queue ${name}${f.offset > 0 ? ` after position ${f.offset}` : ''}`
        : table(
            ['POSITION', 'ID', 'PROJECT', 'NAME', 'PRIORITY', 'AGE', 'EST. START'],
            entries.map((e) => pendingRow(e, now)),
          ),
    );
    const last = f.offset + entries.length;
    if (!s.json && entries.some((e) => (e.estimatedStartAt ?? null) !== null))
      process.stderr.write(
        'EST. START: an estimate, from a forecast of the scheduler with expected runtimes (berth status JOB says how it was made)\n',
      );
    if (!s.json && entries.length > 0 && last < q.pending) {
      process.stderr.write(
        `(positions ${f.offset + 1}-${last} of ${q.pending}; --limit and --offset for more)\n`,
      );
    }
  });

  for (const [command, policy, description] of STOP_COMMANDS) {
    clientCommand(queue, `${command} <name>`, description).action(async (name: string, f: CommonFlags) => {
      const s = openSession(f);
      const q = await s.client.patch<ClusterQueueView>(queuePath(name), { stopPolicy: policy });
      s.show(
        q,
        () => `cluster queue ${q.name}: stop policy ${q.stopPolicy} (${POLICY_EFFECT[q.stopPolicy]})`,
      );
    });
  }
}
