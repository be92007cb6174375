/** Turns what a user sends for a cluster queue into a checked ClusterQueueSpec. Pure. */
import { BadRequestError } from './errors.js';
import {
  DEFAULT_PREEMPTION,
  MAX_BACKFILL_RESERVATIONS,
  type BackfillOptions,
  type BorrowWithinCohort,
  type ClusterQueueSpec,
  type Preemption,
  type QueueAmounts,
  type QueueingStrategy,
  type RuntimeEstimates,
  type StopPolicy,
} from './cluster-queue.js';
import { checkDnsLabel, checkName, RESOURCE_NAME, RESOURCE_NAME_HELP } from './names.js';
import { parseAmount, type Amounts, type QuantityInput } from './quantity.js';

export interface ClusterQueueInput {
  name: string;
  quota?: Record<string, QuantityInput>;
  cohort?: string | null;
  borrowingLimit?: Record<string, QuantityInput>;
  lendingLimit?: Record<string, QuantityInput>;
  queueingStrategy?: QueueingStrategy;
  estimates?: RuntimeEstimates;
  backfill?: BackfillOptions;
  preemption?: Partial<Omit<Preemption, 'borrowWithinCohort'>> & {
    borrowWithinCohort?: Partial<BorrowWithinCohort>;
  };
  stopPolicy?: StopPolicy;
  maxQueuedPerProject?: number | null;
}

/** A change to an existing queue: any subset of the fields, each replacing the old value. */
export type ClusterQueuePatch = Omit<Partial<ClusterQueueInput>, 'name'>;

function quantities(input: Record<string, QuantityInput> | undefined, what: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [resource, value] of Object.entries(input ?? {})) {
    checkName(RESOURCE_NAME, RESOURCE_NAME_HELP, `${what}: resource`, resource);
    parseAmount(resource, value, `${what}.${resource}`);
    out[resource] = typeof value === 'number' ? String(value) : value.trim();
  }
  return out;
}

/** Validates `input` and fills defaults. Throws BadRequestError naming the offending field. */
export function buildClusterQueueSpec(input: ClusterQueueInput): ClusterQueueSpec {
  const name = checkDnsLabel('cluster queue name', input.name);
  const cohort = input.cohort ? checkDnsLabel('cohort', input.cohort) : null;
  const spec: ClusterQueueSpec = {
    name,
    quota: quantities(input.quota, 'quota'),
    cohort,
    borrowingLimit: quantities(input.borrowingLimit, 'borrowingLimit'),
    lendingLimit: quantities(input.lendingLimit, 'lendingLimit'),
    queueingStrategy: input.queueingStrategy ?? 'BestEffortFIFO',
    ...(input.estimates === undefined ? {} : { estimates: input.estimates }),
    ...(input.backfill === undefined ? {} : { backfill: { reservations: input.backfill.reservations } }),
    preemption: {
      ...DEFAULT_PREEMPTION,
      ...input.preemption,
      borrowWithinCohort: {
        ...DEFAULT_PREEMPTION.borrowWithinCohort!,
        ...input.preemption?.borrowWithinCohort,
      },
    },
    stopPolicy: input.stopPolicy ?? 'None',
    maxQueuedPerProject: input.maxQueuedPerProject ?? null,
  };
  const max = spec.maxQueuedPerProject;
  if (max !== null && max !== undefined && (!Number.isSafeInteger(max) || max < 1))
    throw new BadRequestError(`maxQueuedPerProject ${max} must be a whole number of at least 1, or null`);
  const reservations = spec.backfill?.reservations;
  if (
    reservations !== undefined &&
    (!Number.isSafeInteger(reservations) || reservations < 1 || reservations > MAX_BACKFILL_RESERVATIONS)
  )
    throw new BadRequestError(
      `backfill.reservations ${reservations} must be a whole number from 1 to ${MAX_BACKFILL_RESERVATIONS} (reservations a pass keeps; more would make each pass slow)`,
    );
  const borrow = spec.preemption.borrowWithinCohort!;
  // As Kueue requires: borrowing while preempting reclaims from other queues, so it needs that right.
  if (borrow.policy !== 'Never' && spec.preemption.reclaimWithinCohort === 'Never')
    throw new BadRequestError(
      'preemption.borrowWithinCohort: needs preemption.reclaimWithinCohort other than Never (it preempts jobs of other queues in the cohort)',
    );
  if (borrow.maxPriorityThreshold !== null && !Number.isSafeInteger(borrow.maxPriorityThreshold))
    throw new BadRequestError('preemption.borrowWithinCohort.maxPriorityThreshold must be a whole number');
  const amounts = queueAmounts(spec);
  for (const limit of ['borrowingLimit', 'lendingLimit'] as const) {
    for (const resource of Object.keys(spec[limit])) {
      if (!(resource in spec.quota)) {
        throw new BadRequestError(`${limit}.${resource}: the queue has no quota for ${resource}`);
      }
      if (!cohort)
        throw new BadRequestError(
          `${limit}.${resource}: a ${limit} needs a cohort to borrow from or lend to`,
        );
    }
  }
  for (const [resource, lend] of Object.entries(amounts.lendingLimit)) {
    if (lend > (amounts.nominal[resource] ?? 0)) {
      throw new BadRequestError(
        `lendingLimit.${resource}: ${spec.lendingLimit[resource]} is more than the nominal quota ${spec.quota[resource]}`,
      );
    }
  }
  return spec;
}

/** Applies a patch to an existing spec and validates the result. */
export function patchClusterQueueSpec(current: ClusterQueueSpec, patch: ClusterQueuePatch): ClusterQueueSpec {
  return buildClusterQueueSpec({
    ...current,
    ...patch,
    preemption: {
      ...current.preemption,
      ...patch.preemption,
      borrowWithinCohort: {
        ...current.preemption.borrowWithinCohort,
        ...patch.preemption?.borrowWithinCohort,
      },
    },
    name: current.name,
  });
}

const amountsOf = (m: Record<string, string>): Amounts =>
  Object.fromEntries(Object.entries(m).map(([r, q]) => [r, parseAmount(r, q)]));

export function queueAmounts(spec: ClusterQueueSpec): QueueAmounts {
  return {
    nominal: amountsOf(spec.quota),
    borrowingLimit: amountsOf(spec.borrowingLimit),
    lendingLimit: amountsOf(spec.lendingLimit),
  };
}
