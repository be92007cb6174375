/** Schemas of `GET /usage`: its query, and its answer (documented; serialization keeps every field). */
import { Type } from '@sinclair/typebox';
import { USAGE_GROUPINGS, type UsageGrouping } from '../domain/usage.js';

const Time = (description: string) => Type.String({ minLength: 1, maxLength: 64, description });

export const UsageQuery = Type.Object(
  {
    since: Type.Optional(
      Time(
        'from this time (ISO 8601) or this long ago (7d, 12h), rounded down to the hour; default 30 days ago',
      ),
    ),
    until: Type.Optional(Time('to this time or this long ago, rounded up to the hour; default now')),
    by: Type.Optional(
      Type.Unsafe<UsageGrouping>({
        type: 'string',
        enum: [...USAGE_GROUPINGS],
        description: 'what a row is: a project (the default), a user (who submitted), or a cluster queue',
      }),
    ),
    project: Type.Optional(
      Type.String({ minLength: 1, maxLength: 253, description: "only this project's usage" }),
    ),
  },
  { additionalProperties: false },
);

const Count = Type.Integer({ minimum: 0 });

const UsageRowSchema = Type.Object(
  {
    key: Type.String({ description: 'the project, user or queue; "" in the totals' }),
    jobs: Type.Object(
      { succeeded: Count, failed: Count, cancelled: Count },
      { description: 'jobs that ended in the period, by state' },
    ),
    allocations: Type.Integer({
      minimum: 0,
      description: 'allocations (attempts that held quota) that ended in the period',
    }),
    requeued: Type.Integer({ minimum: 0, description: 'of them, evicted and queued again' }),
    retried: Type.Integer({ minimum: 0, description: 'of them, failed and run again' }),
    waitSeconds: Type.Object(
      { mean: Type.Number(), max: Type.Number() },
      { description: 'from entering the queue to admission' },
    ),
    allocationHours: Type.Number({ description: 'time allocations were held within the period' }),
    resourceHours: Type.Record(Type.String(), Type.Number(), {
      description: 'per resource: cpu in core·hours, memory in byte·hours, others in unit·hours',
    }),
  },
  { additionalProperties: true },
);

export const UsageReportSchema = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'the first hour covered' }),
    until: Type.String({ format: 'date-time', description: 'the end of the last hour covered' }),
    by: Type.String(),
    resources: Type.Array(Type.String()),
    rows: Type.Array(UsageRowSchema),
    totals: UsageRowSchema,
  },
  { additionalProperties: true },
);
