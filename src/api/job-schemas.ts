/** Request schemas of the job, agent and infrastructure endpoints. */
import { Type } from '@sinclair/typebox';
import { MAX_ARTIFACT_PATTERN_LENGTH, MAX_ARTIFACT_PATTERNS } from '../domain/artifact.js';
import { JOB_STATES, MAX_GANG_WORKERS } from '../domain/job.js';
import { MAX_ARRAY_INDEX } from '../domain/job-array.js';
import { DEFAULT_RETRY_BACKOFF_SECONDS, MAX_RETRIES, MAX_RETRY_DELAY_SECONDS } from '../domain/retry.js';
import { JOB_SORTS, type JobSort } from '../domain/job-order.js';
import { NO_CONTROL_CHARACTER } from '../domain/names.js';
import { MAX_TERMINAL_SIDE } from '../domain/exec-protocol.js';
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
  name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 253,
      pattern: NO_CONTROL_CHARACTER,
      description: 'no control characters',
    }),
  ),
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
  retries: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_RETRIES,
      description: "retries after the job's own failures (a non-zero exit, its timeout); default 0",
    }),
  ),
  infraRetries: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: MAX_RETRIES,
      description:
        "retries after the infrastructure's failures (its worker lost, its node failed, its worker or a resource could not be made); default 0. Evictions are never charged",
    }),
  ),
  retryBackoffSeconds: Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: MAX_RETRY_DELAY_SECONDS,
      description: `the first retry's delay, doubled for each later one up to ${MAX_RETRY_DELAY_SECONDS}s, with jitter (half fixed, half random); default ${DEFAULT_RETRY_BACKOFF_SECONDS}`,
    }),
  ),
  workers: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_GANG_WORKERS,
      description:
        'a gang job: this many workers at once, all or nothing, each running the command with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS; requests are per worker',
    }),
  ),
  array: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description:
        "a job array, as Slurm's --array: one task per index, each a job with BERTH_ARRAY_ID and BERTH_ARRAY_INDEX; indices as N, N-M or N-M:S, comma-separated, and %K to run at most K tasks at once (0-999%50)",
    }),
  ),
  artifacts: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: MAX_ARTIFACT_PATTERN_LENGTH }), {
      maxItems: MAX_ARTIFACT_PATTERNS,
      description:
        "glob patterns (results/*.csv, out/**), relative to the job's working directory, of the files its agent uploads as artifacts when the job has run: no absolute paths, no '..'",
    }),
  ),
  image: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description:
        "an OCI image to run in (registry/name:tag or registry/name@sha256:…; docker.io's when no registry is named), pinned to its digest when the job is admitted; its Entrypoint runs the command (or its Cmd when the job gives none), with the image's environment and working directory, as docker run. Default: the target's image, else none",
    }),
  ),
  interactive: Type.Optional(
    Type.Boolean({
      description:
        "run on a terminal its submitter attaches to (GET /jobs/{id}/attach; berth run -it): the command starts once one is attached, and the job ends after interactive.detachGrace with none attached or interactive.idleTimeout with no input or output. Needs a time limit (timeoutSeconds, or the target's defaultTimeout) and one worker",
    }),
  ),
});

export const JobParams = strict({ id: Type.Integer({ minimum: 1, description: 'job id' }) });
export const ProjectJobsParams = strict({ name: Type.String({ minLength: 1, maxLength: 253 }) });
/** `berth port-forward`: the port on the job's loopback, and the gang member. */
export const ForwardQuery = strict({
  port: Type.Integer({ minimum: 1, maximum: 65_535 }),
  rank: Type.Optional(Type.Integer({ minimum: 0 })),
});

/** `berth exec`: the command (each argument a `command` parameter, in order) and the gang member. */
export const ExecQuery = strict({
  command: Type.Union([Type.String(), Type.Array(Type.String(), { minItems: 1 })]),
  rank: Type.Optional(Type.Integer({ minimum: 0 })),
  /** A terminal of its own (`berth exec -t`), `cols` × `rows` characters (default 80 × 24). */
  tty: Type.Optional(Type.Boolean()),
  cols: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE })),
  rows: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE })),
});

/** `berth attach`: the size of the terminal that takes the job's over (default 80 × 24). */
export const AttachQuery = strict({
  cols: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE })),
  rows: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TERMINAL_SIDE })),
});

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
  collapse: Type.Optional(
    Type.Boolean({
      description:
        'each job array as one entry: its first task, whose `array` says how all its tasks stand (X-Total-Count still counts every task)',
    }),
  ),
  array: Type.Optional(Type.Integer({ minimum: 1, description: "only this array's tasks (the array's id)" })),
});

export const ArrayParams = strict({
  id: Type.Integer({ minimum: 1, description: "array id (its first task's job id)" }),
});
export const ArrayTaskParams = strict({
  id: Type.Integer({ minimum: 1, description: "array id (its first task's job id)" }),
  index: Type.Integer({ minimum: 0, maximum: MAX_ARRAY_INDEX, description: 'task index' }),
});

export const LogsQuery = strict({
  follow: Type.Optional(Type.Boolean()),
  attempt: Type.Optional(
    Type.Integer({
      minimum: 1,
      description: "only this attempt's output (1 is the first; see /jobs/{id}/attempts)",
    }),
  ),
});
export const HeartbeatQuery = strict({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })) });
const Rank = Type.Integer({
  minimum: 0,
  maximum: MAX_GANG_WORKERS - 1,
  description: 'which member of a gang job the agent runs (0, the default, for a one-worker job)',
});
export const RankQuery = strict({ rank: Type.Optional(Rank) });
export const FinishQuery = strict({
  rank: Type.Optional(Rank),
  next: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: 60,
      description:
        "a pilot's agent: answer with its worker's next job, waiting up to this many seconds (as POST /agent/next does); 204 when the worker does not stay",
    }),
  ),
});
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
  infrastructure: Type.Optional(Type.Boolean()),
});

/** An agent saying what keeps its job from starting (its image's pull), or null. */
export const WaitingBody = strict({ reason: Type.Union([Type.String({ maxLength: 500 }), Type.Null()]) });

/** `berth agent` registering its worker; the one-time credential is the bearer token. */
export const RegisterBody = strict({ workerId: Type.Integer({ minimum: 1 }) });
export const ChannelQuery = strict({ workerId: Type.Integer({ minimum: 1 }), rank: Type.Optional(Rank) });

export const WorkerQuery = strict({
  state: Type.Optional(Type.Union(WORKER_STATES.map((s) => Type.Literal(s)))),
});
