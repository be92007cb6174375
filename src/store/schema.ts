/**
 * Table types for Kysely. Both dialects store the same shapes: timestamps as integer
 * milliseconds since the epoch, booleans as 0/1, structured values as JSON text, so that one
 * query path serves SQLite and PostgreSQL.
 */
import type { Generated, Selectable } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  name: string;
  admin: number;
  created_at: number;
}

export interface ApiTokensTable {
  /** SHA-256 of the token, hex. The token itself is never stored. */
  hash: string;
  user_id: number | null;
  /** Set for job tokens: the token reaches only this job's data. */
  job_id: number | null;
  label: string;
  created_at: number;
  expires_at: number | null;
  /** For tokens made by the `token` well: the one project they act in. */
  scope: string | null;
  /** For tokens made by the `token` well: `read` or `submit` (domain/tokens.ts); null reads. */
  access: string | null;
  /** User tokens: when last used, recorded at most about once a minute (migration 0011). */
  last_used_at: number | null;
}

export interface ClusterQueuesTable {
  name: string;
  /** JSON of ClusterQueueSpec minus the name. */
  spec: string;
  created_at: number;
  updated_at: number;
}

export interface ProjectsTable {
  name: string;
  description: string;
  /** JSON array of strings. */
  tags: string;
  cluster_queue: string;
  active: number;
  /** Fair-share weight (migration 0003). */
  weight: number;
  /** The most of its jobs queued at once; null: its queue's default (migration 0013). */
  max_queued: number | null;
  created_at: number;
  updated_at: number;
}

export interface ProjectMembersTable {
  project: string;
  user_id: number;
  role: string;
}

export interface ProjectPrivilegesTable {
  project: string;
  privilege: string;
}

/** The audit trail: every change is recorded here in the transaction that makes it. */
export interface EventsTable {
  id: Generated<number>;
  at: number;
  /** What changed: `user`, `cluster-queue`, `project`, `job`, … */
  subject_kind: string;
  subject: string;
  project: string | null;
  job_id: number | null;
  type: string;
  message: string;
  /** JSON, or null. */
  data: string | null;
}

export interface JobsTable {
  id: Generated<number>;
  project: string;
  name: string;
  state: string;
  reason: string;
  cluster_queue: string;
  target: string;
  priority: number;
  /** JSON of JobSpec. */
  spec: string;
  idempotency_key: string | null;
  created_by: string;
  exit_code: number | null;
  /** JSON Amounts borrowed from the cohort at admission, or null. */
  borrowed: string | null;
  cancel_requested: number;
  cleaned_up: number;
  attempts: number;
  /** Retries used per budget, and when a job waiting to be retried goes back to its queue (0014). */
  retried: Generated<number>;
  infra_retried: Generated<number>;
  retry_at: number | null;
  /** A task's array (its first task's id) and index (0016); null for a job of its own. */
  array_id: number | null;
  array_index: number | null;
  /** When its current attempt entered its queue, if not at its creation (0017). */
  queued_at: number | null;
  created_at: number;
  admitted_at: number | null;
  started_at: number | null;
  finished_at: number | null;
}

export interface WorkersTable {
  id: Generated<number>;
  job_id: number;
  factory: string;
  target: string;
  state: string;
  /** JSON: what the factory needs to find the worker again (pid, directory, …). */
  handle: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  heartbeat_at: number | null;
  /** The hash of its agent's one-time registration credential, until spent (0009). */
  registration: string | null;
  /** Its agents yet to register with that credential: a gang's worker has one per member (0010). */
  unregistered: Generated<number>;
}

export interface ResourceInstancesTable {
  id: Generated<number>;
  job_id: number;
  type: string;
  state: string;
  /** JSON Metadata; secret: served only to the job holding the instance. */
  metadata: string | null;
  error: string | null;
  created_at: number;
  updated_at: number;
}

/** Named priorities (migration 0003). */
export interface PriorityClassesTable {
  name: string;
  value: number;
  description: string;
  created_at: number;
}

/** Jobs per project and state, kept by triggers on `jobs` (migration 0005). */
export interface JobCountsTable {
  project: string;
  state: string;
  n: number;
}

/** Job output on PostgreSQL, in upload order (migration 0006). */
export interface JobLogsTable {
  id: Generated<number>;
  job_id: number;
  /** The output's bytes (bytea on PostgreSQL since migration 0018: text cannot hold a NUL). */
  data: Buffer;
}

/** The leader's lease: one row, `scheduler` (migration 0006). Times in ms on the database's clock. */
export interface LeaderLeaseTable {
  name: string;
  /** The replica holding it ('' when none ever has). */
  holder: string;
  /** Where the holder serves the API. */
  url: string;
  /** Grows by one at every election: the fencing token of the leader's writes. */
  term: number;
  expires_at: number;
}

/** What the leader publishes for the other replicas: figures from its in-memory model. */
export interface LiveFiguresTable {
  name: string;
  term: number;
  /** JSON. */
  data: string;
  at: number;
}

/** A project's credentials for one registry (0022): the password sealed (store/secret-box.ts). */
export interface RegistryCredentialsTable {
  project: string;
  /** `host[:port]`, as image references name it. */
  registry: string;
  username: string;
  /** The password, sealed with the installation's secret key: never in the clear here. */
  sealed: string;
  updated_by: string;
  updated_at: number;
}

/**
 * Who changed what through the API, when and from where (migration 0012), written in the
 * transaction of the change. Never a secret: no token, no resource metadata, no env value.
 */
export interface AuditLogTable {
  id: Generated<number>;
  at: number;
  /** A user's name, `job N`, `job N (project token)`, or `system` (first start). */
  actor: string;
  /** `user`, `job`, `project-token` or `system`. */
  actor_kind: string;
  /** The request's remote address (Fastify's `request.ip`), or null for the server itself. */
  address: string | null;
  /** `user.create`, `token.revoke`, `job.submit`, … (domain/audit.ts). */
  action: string;
  subject: string;
  project: string | null;
  /** JSON, or null. */
  detail: string | null;
}

/**
 * The files a job's run kept (migration 0015); the bytes live on disk, at
 * `<artifacts dir>/<job_id>/<attempt>/<name>` (store/artifact-files.ts).
 */
export interface JobArtifactsTable {
  job_id: number;
  /** The run that uploaded it: the job's attempts + 1 then. */
  attempt: number;
  /** Its path relative to the job's working directory. */
  name: string;
  size: number;
  /** SHA-256 of its bytes, hex. */
  sha256: string;
  created_at: number;
}

/** An ended attempt of a job that ran again (evicted and requeued, or retried) (0014). */
export interface JobAttemptsTable {
  job_id: number;
  attempt: number;
  outcome: string;
  charged: string;
  reason: string;
  exit_code: number | null;
  started_at: number | null;
  ended_at: number;
  /** Where its output ends in the job's log (LogStore.mark). */
  log_end: number;
}

/**
 * The usage ledger (migration 0017): one row per ended allocation (attempt) of a job, written in
 * the transaction of the state change that ends it; append-only. Names are copied in, not keys.
 */
export interface UsageLedgerTable {
  /** Its place in the ledger (keyset pages for the store copy). */
  id: Generated<number>;
  job_id: number;
  attempt: number;
  project: string;
  /** The job's name (start-time estimates take runtimes of jobs of the same name). */
  name: string;
  /** The job's `created_by`. */
  user_name: string;
  queue: string;
  target: string;
  worker_id: number | null;
  workers: number;
  /** JSON of the job's requests per worker, as submitted. */
  requests: string;
  queued_at: number;
  admitted_at: number | null;
  started_at: number | null;
  ended_at: number;
  /** domain/usage.ts AllocationOutcome. */
  outcome: string;
  final: number;
}

/**
 * Rollups of the ledger per hour (its start, epoch ms), project, user and queue (0017); the
 * `usage_daily` tables have the same shape per UTC day (`hour`: the day's start).
 */
export interface UsageHourlyTable {
  hour: number;
  project: string;
  user_name: string;
  queue: string;
  allocations: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  requeued: number;
  retried: number;
  wait_ms_sum: number;
  wait_count: number;
  wait_ms_max: number;
  held_ms: number;
}

/** Per resource of `usage_hourly`: its amount (base units) × seconds held in the hour (0017). */
export interface UsageHourlyResourcesTable {
  hour: number;
  project: string;
  user_name: string;
  queue: string;
  resource: string;
  amount_seconds: number;
}

/**
 * Ended jobs removed by the retention sweep (migration 0019): ids `first_id`..`last_id`, every
 * one of them gone (ids in between that still exist were not removed), which ended between
 * `ended_from` and `ended_to` (epoch ms) and were kept `retention_seconds`.
 */
export interface RemovedJobsTable {
  first_id: number;
  last_id: number;
  ended_from: number;
  ended_to: number;
  retention_seconds: number;
  removed_at: number;
}

/** Installation-wide settings (migration 0006): `installation` → its id. */
export interface SettingsTable {
  name: string;
  value: string;
}

export interface Database {
  users: UsersTable;
  api_tokens: ApiTokensTable;
  cluster_queues: ClusterQueuesTable;
  projects: ProjectsTable;
  project_members: ProjectMembersTable;
  project_privileges: ProjectPrivilegesTable;
  events: EventsTable;
  jobs: JobsTable;
  workers: WorkersTable;
  resource_instances: ResourceInstancesTable;
  priority_classes: PriorityClassesTable;
  job_counts: JobCountsTable;
  job_logs: JobLogsTable;
  leader_lease: LeaderLeaseTable;
  live_figures: LiveFiguresTable;
  settings: SettingsTable;
  audit_log: AuditLogTable;
  job_attempts: JobAttemptsTable;
  job_artifacts: JobArtifactsTable;
  usage_ledger: UsageLedgerTable;
  usage_hourly: UsageHourlyTable;
  usage_hourly_resources: UsageHourlyResourcesTable;
  usage_daily: UsageHourlyTable;
  usage_daily_resources: UsageHourlyResourcesTable;
  removed_jobs: RemovedJobsTable;
  registry_credentials: RegistryCredentialsTable;
}

export type JobRow = Selectable<JobsTable>;
export type WorkerRow = Selectable<WorkersTable>;
export type ResourceInstanceRow = Selectable<ResourceInstancesTable>;

export type UserRow = Selectable<UsersTable>;
export type ProjectRow = Selectable<ProjectsTable>;
export type ClusterQueueRow = Selectable<ClusterQueuesTable>;
export type EventRow = Selectable<EventsTable>;
