/** Request schemas of the job, agent and infrastructure endpoints. */
import { Type } from '@sinclair/typebox';
import { JOB_STATES, MAX_GANG_WORKERS } from '../domain/job.js';
import { JOB_SORTS, type JobSort } from '../domain/job-order.js';
import { PRIORITY_MAX, PRIORITY_MIN } from '../domain/priority-class.js';
import { WORKER_STATES } from '../domain/worker.js';
import { Quantity } from './schemas.js';

const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });

const JobIds = (description: string) =>
  Type.Array(Type.Union([Type.Integer({ minimum: 1 }), Type.String({ pattern: '^[0-9]+$' })]), {
    maxItems: 256,
    description,
  });

export const SubmitBody = strict({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
  command: Type.Optional(
    Type.Array(Type.String({ maxLength: 65536 }), { minItems: 1, maxItems: 4096, description: 'argv' }),
  ),
  script: Type.Optional(Type.String({ maxLength: 262144, description: 'run with /bin/sh -c' })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 63 })),
  requests: Type.Optional(Type.Record(Type.String({ maxLength: 316 }), Quantity)),
  resources: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 63 }), { maxItems: 64 })),
  priority: Type.Optional(
    Type.Union([
      Type.Integer({ minimum: PRIORITY_MIN, maximum: PRIORITY_MAX }),
      Type.String({ minLength: 1, maxLength: 63, description: 'a priority class name' }),
    ]),
  ),
  env: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 65536 }))),
  timeoutSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 31_536_000 })),
  dependsOn: Type.Optional(JobIds('run only after each of these jobs has succeeded (afterok)')),
  dependsOnAny: Type.Optional(JobIds('run only after each of these jobs has ended, however (afterany)')),
  dependsOnFailed: Type.Optional(
    JobIds('run only after each of these jobs has failed or been cancelled (afternotok)'),
  ),
  idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  workers: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_GANG_WORKERS,
      description:
        'a gang job: this many workers at once, all or nothing, each running the command with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS; requests are per worker',
    }),
  ),
});

export const JobParams = strict({ id: Type.Integer({ minimum: 1, description: 'job id' }) });
export const ProjectJobsParams = strict({ name: Type.String({ minLength: 1, maxLength: 253 }) });

export const JobListQuery = strict({
  state: Type.Optional(Type.String({ description: `comma-separated: ${JOB_STATES.join(', ')}` })),
  sort: Type.Optional(
    Type.Unsafe<JobSort>({
      type: 'string',
      enum: [...JOB_SORTS],
      description: '-id newest first (default), id oldest first, -priority or priority (ties by newest)',
    }),
  ),
  cursor: Type.Optional(
    Type.String({ maxLength: 200, description: 'the X-Next-Cursor header of the previous page' }),
  ),
  before: Type.Optional(
    Type.Integer({ minimum: 1, description: 'only jobs with a smaller id (older paging; prefer cursor)' }),
  ),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});

export const LogsQuery = strict({ follow: Type.Optional(Type.Boolean()) });
export const HeartbeatQuery = strict({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })) });
const Rank = Type.Integer({
  minimum: 0,
  maximum: MAX_GANG_WORKERS - 1,
  description: 'which member of a gang job the agent runs (0, the default, for a one-worker job)',
});
export const RankQuery = strict({ rank: Type.Optional(Rank) });
export const AgentHeartbeatQuery = strict({
  wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })),
  rank: Type.Optional(Rank),
});
export const StartQuery = strict({
  rank: Type.Optional(Rank),
  host: Type.Optional(
    Type.String({ maxLength: 253, description: "the host the member's peers reach it by (BERTH_HOSTS)" }),
  ),
  wait: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 60, description: "how long to wait for a gang's other ranks" }),
  ),
});

export const FinishBody = strict({
  outcome: Type.Union([
    Type.Literal('exited'),
    Type.Literal('timeout'),
    Type.Literal('cancelled'),
    Type.Literal('start-failed'),
  ]),
  exitCode: Type.Union([Type.Integer(), Type.Null()]),
  signal: Type.Union([Type.String({ maxLength: 32 }), Type.Null()]),
  message: Type.Optional(Type.String({ maxLength: 4096 })),
});

/** `berth agent` registering its worker; the one-time credential is the bearer token. */
export const RegisterBody = strict({ workerId: Type.Integer({ minimum: 1 }) });

export const WorkerQuery = strict({
  state: Type.Optional(Type.Union(WORKER_STATES.map((s) => Type.Literal(s)))),
});
