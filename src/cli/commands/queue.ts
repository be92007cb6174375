/** `berth queue …`: cluster queues, the pools of quota projects draw on (admin). */
import { Option, type Command } from 'commander';
import {
  INTERACTIVE_PREEMPTION,
  BORROW_WITHIN_COHORT,
  QUEUEING_STRATEGIES,
  RUNTIME_ESTIMATES,
  RECLAIM_WITHIN_COHORT,
  STOP_POLICIES,
  WITHIN_CLUSTER_QUEUE,
  type BorrowWithinCohort,
  type BorrowWithinCohortPolicy,
  type InteractivePreemption,
  type Preemption,
  type QueueingStrategy,
  type RuntimeEstimates,
  type StopPolicy,
} from '../../domain/cluster-queue.js';
import type { ClusterQueueView } from '../api-types.js';
import { apiPath } from '../client.js';
import { UsageError } from '../errors.js';
import { integerOrNone, limitOrNone, limitValue, positiveInteger, quantityList } from '../flags.js';
import { fields, quantities, table, timeText } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';
import { registerQueueControlCommands } from './queue-control.js';

interface QueueFlags extends CommonFlags {
  quota?: Record<string, string>;
  /** `false` from --no-cohort (update only). */
  cohort?: string | false;
  borrowingLimit?: Record<string, string>;
  lendingLimit?: Record<string, string>;
  strategy?: QueueingStrategy;
  estimates?: RuntimeEstimates;
  reservations?: number;
  withinQueuePreemption?: Preemption['withinClusterQueue'];
  reclaimWithinCohort?: Preemption['reclaimWithinCohort'];
  borrowWithinCohort?: BorrowWithinCohortPolicy;
  maxPriorityThreshold?: number | 'none';
  interactivePreemption?: InteractivePreemption;
  stopPolicy?: StopPolicy;
  maxQueuedPerProject?: number | 'none';
}

const QUANTITIES_HELP = 'RESOURCE=QUANTITY,… e.g. cpu=8,memory=32Gi,jobs=10';

/** The flags create and update share. */
function queueOptions(cmd: Command, quotaRequired: boolean): Command {
  const quota = `nominal quota: ${QUANTITIES_HELP}${quotaRequired ? '' : ' (replaces the whole quota)'}`;
  if (quotaRequired) cmd.requiredOption('--quota <quantities>', quota, quantityList);
  else cmd.option('--quota <quantities>', quota, quantityList);
  return cmd
    .option('--cohort <cohort>', 'cohort to borrow unused quota from and lend to')
    .option(
      '--borrowing-limit <quantities>',
      `how far above its quota it may borrow: ${QUANTITIES_HELP}`,
      quantityList,
    )
    .option(
      '--lending-limit <quantities>',
      `how much of its quota others may borrow: ${QUANTITIES_HELP}`,
      quantityList,
    )
    .addOption(new Option('--strategy <strategy>', 'queueing strategy').choices(QUEUEING_STRATEGIES))
    .addOption(
      new Option(
        '--estimates <estimates>',
        "Backfill: plan with the jobs' timeouts (requested) or also with the runtimes learned from jobs like them (learned)",
      ).choices(RUNTIME_ESTIMATES),
    )
    .option(
      '--reservations <n>',
      "Backfill: how many of the first jobs that cannot start now hold a reservation (1: EASY, the default; up to 100; Slurm's bf_max_job_test)",
      positiveInteger,
    )
    .addOption(
      new Option('--within-queue-preemption <policy>', 'preemption within the queue').choices(
        WITHIN_CLUSTER_QUEUE,
      ),
    )
    .addOption(
      new Option('--reclaim-within-cohort <policy>', 'reclaiming lent quota in the cohort').choices(
        RECLAIM_WITHIN_COHORT,
      ),
    )
    .addOption(
      new Option(
        '--borrow-within-cohort <policy>',
        'a job that must borrow may preempt lower-priority jobs of other queues that borrow (needs --reclaim-within-cohort)',
      ).choices(BORROW_WITHIN_COHORT),
    )
    .option(
      '--max-priority-threshold <n|none>',
      'with --borrow-within-cohort: only jobs of at most this priority are preempted',
      integerOrNone,
    )
    .addOption(
      new Option(
        '--interactive-preemption <policy>',
        "whether this queue's running interactive jobs (berth run -it) may be preempted (default Never)",
      ).choices(INTERACTIVE_PREEMPTION),
    )
    .addOption(
      new Option('--stop-policy <policy>', 'stop admitting (Hold) or also drain').choices(STOP_POLICIES),
    )
    .option(
      '--max-queued-per-project <n|none>',
      'the most jobs each project may have queued at once, unless it sets its own maxQueued',
      limitOrNone,
    );
}

/** The request body: only what was given, so an update changes only those fields. */
function queueBody(f: QueueFlags): Record<string, unknown> {
  const borrow = {
    ...(f.borrowWithinCohort ? { policy: f.borrowWithinCohort } : {}),
    ...(f.maxPriorityThreshold !== undefined
      ? { maxPriorityThreshold: f.maxPriorityThreshold === 'none' ? null : f.maxPriorityThreshold }
      : {}),
  };
  const preemption = {
    ...(f.withinQueuePreemption ? { withinClusterQueue: f.withinQueuePreemption } : {}),
    ...(f.reclaimWithinCohort ? { reclaimWithinCohort: f.reclaimWithinCohort } : {}),
    ...(Object.keys(borrow).length > 0 ? { borrowWithinCohort: borrow } : {}),
    ...(f.interactivePreemption ? { interactive: f.interactivePreemption } : {}),
  };
  return {
    ...(f.quota ? { quota: f.quota } : {}),
    ...(f.cohort !== undefined ? { cohort: f.cohort === false ? null : f.cohort } : {}),
    ...(f.borrowingLimit ? { borrowingLimit: f.borrowingLimit } : {}),
    ...(f.lendingLimit ? { lendingLimit: f.lendingLimit } : {}),
    ...(f.strategy ? { queueingStrategy: f.strategy } : {}),
    ...(f.estimates ? { estimates: f.estimates } : {}),
    ...(f.reservations !== undefined ? { backfill: { reservations: f.reservations } } : {}),
    ...(Object.keys(preemption).length > 0 ? { preemption } : {}),
    ...(f.stopPolicy ? { stopPolicy: f.stopPolicy } : {}),
    ...(f.maxQueuedPerProject !== undefined
      ? { maxQueuedPerProject: limitValue(f.maxQueuedPerProject) }
      : {}),
  };
}

/** ", borrow within cohort LowerPriority (priority ≤ 100)", or nothing for Never. */
function borrowText(b: BorrowWithinCohort | undefined): string {
  if (!b || b.policy === 'Never') return '';
  const max = b.maxPriorityThreshold === null ? '' : ` (priority ≤ ${b.maxPriorityThreshold})`;
  return `, borrow within cohort ${b.policy}${max}`;
}

/** ", 5 reservations" (conservative up to 5 jobs), ", 1 reservation (EASY)", or nothing when not set. */
function reservationsText(n: number | undefined): string {
  if (n === undefined) return '';
  return n === 1 ? ', 1 reservation (EASY)' : `, ${n} reservations`;
}

function describeQueue(q: ClusterQueueView): string {
  return fields([
    ['name', q.name],
    ['cohort', q.cohort],
    ['quota', quantities(q.quota)],
    ['borrowing limit', quantities(q.borrowingLimit)],
    ['lending limit', quantities(q.lendingLimit)],
    [
      'strategy',
      q.queueingStrategy === 'Backfill'
        ? `Backfill, ${q.estimates ?? 'requested'} estimates${reservationsText(q.backfill?.reservations)}`
        : q.queueingStrategy,
    ],
    [
      'preemption',
      `within queue ${q.preemption.withinClusterQueue}, reclaim within cohort ${q.preemption.reclaimWithinCohort}${borrowText(q.preemption.borrowWithinCohort)}; interactive jobs ${(q.preemption.interactive ?? 'Never') === 'Never' ? 'never preempted' : 'preempted like any'}`,
    ],
    ['stop policy', q.stopPolicy],
    ['max queued per project', q.maxQueuedPerProject ?? null],
    ['usage', quantities(q.usage)],
    ['borrowed', quantities(q.borrowed)],
    ['pending', q.pending],
    ['admitted', q.admitted],
    ['running', q.running],
    ['created', timeText(q.createdAt)],
    ['updated', timeText(q.updatedAt)],
  ]);
}

const queuePath = (name: string) => apiPath`/cluster-queues/${name}`;

export function registerQueueCommands(program: Command): void {
  const queue = program
    .command('queue')
    .description('manage cluster queues: pools of quota projects draw on');

  examples(queueOptions(clientCommand(queue, 'create <name>', 'create a cluster queue (admin)'), true), [
    'berth queue create research --quota cpu=8,memory=32Gi,jobs=10',
    'berth queue create gpu --quota cpu=32,nvidia.com/gpu=4 --cohort lab --borrowing-limit cpu=8',
  ]).action(async (name: string, f: QueueFlags) => {
    const s = openSession(f);
    const q = await s.client.post<ClusterQueueView>('/cluster-queues', { name, ...queueBody(f) });
    s.show(q, () => `cluster queue ${q.name} created with quota ${quantities(q.quota)}`);
  });

  clientCommand(queue, 'list', 'list cluster queues with usage and pending jobs').action(
    async (f: CommonFlags) => {
      const s = openSession(f);
      const queues = await s.client.get<ClusterQueueView[]>('/cluster-queues');
      s.show(queues, () =>
        queues.length === 0
          ? 'no cluster queues (create one: berth queue create NAME --quota cpu=8,memory=32Gi)'
          : table(
              ['NAME', 'COHORT', 'QUOTA', 'USAGE', 'PENDING', 'ADMITTED'],
              queues.map((q) => [
                q.name,
                q.cohort,
                quantities(q.quota),
                quantities(q.usage),
                q.pending,
                q.admitted,
              ]),
            ),
      );
    },
  );

  clientCommand(queue, 'show <name>', 'a cluster queue: quota, limits, policies, usage').action(
    async (name: string, f: CommonFlags) => {
      const s = openSession(f);
      const q = await s.client.get<ClusterQueueView>(queuePath(name));
      s.show(q, () => describeQueue(q));
    },
  );

  examples(
    queueOptions(
      clientCommand(
        queue,
        'update <name>',
        'change a cluster queue (admin); given fields replace the old ones',
      ),
      false,
    ).option('--no-cohort', 'leave its cohort'),
    [
      'berth queue update research --quota cpu=16,memory=64Gi',
      'berth queue update research --stop-policy Hold',
    ],
  ).action(async (name: string, f: QueueFlags) => {
    const body = queueBody(f);
    if (Object.keys(body).length === 0)
      throw new UsageError('nothing to update: give at least one option (see --help)');
    const s = openSession(f);
    const q = await s.client.patch<ClusterQueueView>(queuePath(name), body);
    s.show(q, () => `cluster queue ${q.name} updated`);
  });

  clientCommand(
    queue,
    'delete <name>',
    'delete a cluster queue (admin); refused while projects use it',
  ).action(async (name: string, f: CommonFlags) => {
    const s = openSession(f);
    await s.client.delete(queuePath(name));
    s.show({ name, deleted: true }, () => `cluster queue ${name} deleted`);
  });

  registerQueueControlCommands(queue);
}
