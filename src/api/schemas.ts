/**
 * Request schemas (TypeBox → JSON Schema). Fastify validates every body, path and query against
 * these before a handler runs, and @fastify/swagger publishes them as the OpenAPI document.
 * Objects reject unknown fields; semantic checks (names, quantities) live in the domain layer.
 */
import { Type, type TInteger } from '@sinclair/typebox';
import {
  BORROW_WITHIN_COHORT,
  INTERACTIVE_PREEMPTION,
  QUEUEING_STRATEGIES,
  MAX_BACKFILL_RESERVATIONS,
  RUNTIME_ESTIMATES,
  RECLAIM_WITHIN_COHORT,
  STOP_POLICIES,
  WITHIN_CLUSTER_QUEUE,
} from '../domain/cluster-queue.js';
import { NO_CONTROL_CHARACTER } from '../domain/names.js';
import { JOB_STATES, type JobState } from '../domain/job.js';
import { PRIORITY_MAX, PRIORITY_MIN } from '../domain/priority-class.js';
import { ROLES } from '../domain/roles.js';
import { MAX_QUEUED_LIMIT } from '../domain/project.js';

const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T, description?: string) =>
  Type.Object(props, { additionalProperties: false, ...(description ? { description } : {}) });

const literals = <T extends readonly string[]>(values: T, description?: string) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...(description ? { description } : {}) });

export const Quantity = Type.Union([Type.String({ maxLength: 64 }), Type.Number({ minimum: 0 })], {
  description: 'Kubernetes quantity: 500m, 2, 1.5, 16Gi, 10G',
});
const Quantities = (description: string) =>
  Type.Record(Type.String({ maxLength: 316 }), Quantity, { description });

const Name = (description: string) => Type.String({ minLength: 1, maxLength: 253, description });

export const NameParams = strict({ name: Name('name') });
export const MemberParams = strict({ name: Name('project'), user: Name('user name') });
export const PrivilegeParams = strict({
  name: Name('project'),
  privilege: Name('privilege, e.g. target.gpu'),
});

const queueFields = {
  quota: Type.Optional(Quantities('nominal quota per resource; resources not named are not limited')),
  cohort: Type.Optional(Type.Union([Name('cohort to borrow from and lend to'), Type.Null()])),
  borrowingLimit: Type.Optional(Quantities('per resource: how far above nominal this queue may borrow')),
  lendingLimit: Type.Optional(Quantities('per resource: how much of its nominal others may borrow')),
  queueingStrategy: Type.Optional(literals(QUEUEING_STRATEGIES)),
  estimates: Type.Optional(literals(RUNTIME_ESTIMATES)),
  backfill: Type.Optional(
    strict(
      {
        reservations: Type.Integer({
          minimum: 1,
          maximum: MAX_BACKFILL_RESERVATIONS,
          description:
            "Backfill: how many of the first pending jobs that cannot start now hold a reservation (1: EASY; Slurm's bf_max_job_test)",
        }),
      },
      'Backfill queues: how many reservations a pass keeps',
    ),
  ),
  preemption: Type.Optional(
    strict({
      withinClusterQueue: Type.Optional(literals(WITHIN_CLUSTER_QUEUE)),
      reclaimWithinCohort: Type.Optional(literals(RECLAIM_WITHIN_COHORT)),
      borrowWithinCohort: Type.Optional(
        strict(
          {
            policy: Type.Optional(literals(BORROW_WITHIN_COHORT)),
            maxPriorityThreshold: Type.Optional(
              Type.Union([Type.Integer({ minimum: PRIORITY_MIN, maximum: PRIORITY_MAX }), Type.Null()]),
            ),
          },
          "Kueue's borrowWithinCohort: a job that must borrow may preempt lower-priority jobs of other queues in the cohort that borrow, at or below maxPriorityThreshold (needs reclaimWithinCohort)",
        ),
      ),
      interactive: Type.Optional(
        literals(
          INTERACTIVE_PREEMPTION,
          "whether this queue's running interactive jobs (berth run -it) may be preempted, by its own jobs or its cohort's reclaim: Never (default) or Allowed",
        ),
      ),
    }),
  ),
  stopPolicy: Type.Optional(literals(STOP_POLICIES)),
  maxQueuedPerProject: Type.Optional(
    Type.Union([Type.Integer({ minimum: 1, maximum: MAX_QUEUED_LIMIT }), Type.Null()], {
      description:
        "each project's maxQueued unless the project sets its own: the most of its jobs queued at once (null: no limit)",
    }),
  ),
};
export const CreateQueueBody = strict({ name: Name('cluster queue name (DNS label)'), ...queueFields });
export const PatchQueueBody = strict(queueFields);

const Tags = Type.Array(Type.String({ maxLength: 63 }), { maxItems: 64 });
const Weight = Type.Number({
  exclusiveMinimum: 0,
  maximum: 1_000_000,
  description: 'fair-share weight in its cluster queue (admins only; default 1)',
});
const MaxQueued = Type.Union([Type.Integer({ minimum: 1, maximum: MAX_QUEUED_LIMIT }), Type.Null()], {
  description:
    "the most of its jobs queued at once (waiting for admission): a submission past it gets 429 (admins only; null: the queue's maxQueuedPerProject)",
});
export const CreateProjectBody = strict({
  name: Name('project name (DNS label)'),
  description: Type.Optional(Type.String({ maxLength: 4096 })),
  tags: Type.Optional(Tags),
  clusterQueue: Name('the cluster queue whose quota this project draws on'),
  active: Type.Optional(Type.Boolean()),
  weight: Type.Optional(Weight),
  maxQueued: Type.Optional(MaxQueued),
});
export const PatchProjectBody = strict({
  description: Type.Optional(Type.String({ maxLength: 4096 })),
  tags: Type.Optional(Tags),
  clusterQueue: Type.Optional(Name('cluster queue (admins only)')),
  active: Type.Optional(Type.Boolean()),
  weight: Type.Optional(Weight),
  maxQueued: Type.Optional(MaxQueued),
});
export const PendingQuery = strict({
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'entries to skip' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});

export const CreatePriorityClassBody = strict({
  name: Name('priority class name (DNS label, not a number)'),
  value: Type.Integer({
    minimum: PRIORITY_MIN,
    maximum: PRIORITY_MAX,
    description: 'the priority jobs of this class get; higher is admitted first',
  }),
  description: Type.Optional(Type.String({ maxLength: 4096 })),
});

export const MemberBody = strict({ role: literals(ROLES) });

export const RegistryParams = strict({
  name: Name('project'),
  registry: Type.String({
    minLength: 1,
    maxLength: 255,
    description:
      'a registry, as image references name it: host[:port] (registry.example.org, 127.0.0.1:5000)',
  }),
});

export const RegistryLoginBody = strict({
  username: Type.String({ minLength: 1, maxLength: 255, pattern: NO_CONTROL_CHARACTER }),
  password: Type.String({
    minLength: 1,
    maxLength: 16_384,
    description: 'kept sealed with the installation key, never shown again (a token works as well)',
  }),
});

// Views: what GET answers. Serialization keeps fields these do not name (additionalProperties),
// so they document the shape without ever dropping a field.
const view = <T extends Parameters<typeof Type.Object>[0]>(props: T, description?: string) =>
  Type.Object(props, { additionalProperties: true, ...(description ? { description } : {}) });

export const JobCountsSchema = Type.Object(
  Object.fromEntries(JOB_STATES.map((s) => [s, Type.Integer({ minimum: 0 })])) as Record<JobState, TInteger>,
  { description: "how many of the project's jobs are in each state" },
);
const projectFields = {
  name: Type.String(),
  description: Type.String(),
  tags: Type.Array(Type.String()),
  clusterQueue: Type.String(),
  active: Type.Boolean(),
  weight: Type.Number(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
  jobCounts: JobCountsSchema,
};
export const ProjectViewSchema = view(projectFields, 'a project the caller can see');
export const ProjectDetailViewSchema = view(
  {
    ...projectFields,
    members: Type.Array(view({ user: Type.String(), role: literals(ROLES) })),
    privileges: Type.Array(Type.String()),
    role: literals([...ROLES, 'admin'], "the caller's role; admin for global admins"),
  },
  'a project with its members and privileges',
);

/**
 * The schemas are JSON Schema draft 7 (what Ajv checks); the document @fastify/swagger serves
 * declares OpenAPI 3.0, whose schemas spell an exclusive bound draft 4's way: a boolean beside
 * `minimum`/`maximum` (weight > 0 is `minimum: 0, exclusiveMinimum: true`, not
 * `exclusiveMinimum: 0`). Returns a copy in 3.0's spelling; validation keeps the original.
 */
export function toOpenApi30<T>(schema: T): T {
  if (Array.isArray(schema)) return schema.map((s: unknown) => toOpenApi30(s)) as T;
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) out[key] = toOpenApi30(value);
  for (const [exclusive, bound, sign] of [
    ['exclusiveMinimum', 'minimum', 1],
    ['exclusiveMaximum', 'maximum', -1],
  ] as const) {
    const limit = out[exclusive];
    if (typeof limit !== 'number') continue;
    const inclusive = out[bound];
    // Both given: the tighter wins (x >= 5 and x > 0 is x >= 5).
    if (typeof inclusive === 'number' && sign * (inclusive - limit) > 0) delete out[exclusive];
    else Object.assign(out, { [bound]: limit, [exclusive]: true });
  }
  return out as T;
}
