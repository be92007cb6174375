/**
 * The shape of berth.yaml: TypeBox schemas (the runtime check) and the types they give. A leaf
 * module: the controller, factories, wells and services read their settings' types from here
 * without reaching into the server that loads the file (load.ts).
 */
import { Type, type Static } from '@sinclair/typebox';
import { PROJECT_TOKEN_ACCESS } from '../domain/project-token-access.js';
import type { UidRange } from '../domain/uid-range.js';
import type { SessionLimits } from '../domain/exec-protocol.js';

const Capacity = Type.Integer({ minimum: 1, description: 'instances alive at once' });
const Privilege = Type.String({ minLength: 1 });
const strict = <T extends Parameters<typeof Type.Object>[0]>(props: T) =>
  Type.Object(props, { additionalProperties: false });

export const FACTORY_KINDS = ['local', 'simulated', 'slurm'] as const;
/** Simulated workers cost no process: room for a large scenario by default. */
export const SIMULATED_CAPACITY = 10_000;
export const RESOURCE_KINDS = ['semaphore', 'exec', 'postgres', 'token'] as const;

/** local: whether jobs' requests are enforced with cgroups (docs/CONFIGURATION.md). */
export const CGROUPS_MODES = ['auto', 'off', 'required'] as const;
export type CgroupsMode = (typeof CGROUPS_MODES)[number];

/**
 * local: whether each job runs under a Unix identity of its own (docs/SECURITY.md): `auto` where
 * the server can switch users, else jobs run as the server's user (one tenant only); `required`:
 * else refuse to start; `off`: always as the server's user.
 */
export const ISOLATION_MODES = ['auto', 'required', 'off'] as const;
export type IsolationMode = (typeof ISOLATION_MODES)[number];

/** local, with cgroups: the processes (and threads) one job may have at once unless configured. */
export const DEFAULT_PIDS_LIMIT = 4096;

/**
 * local: whether each job gets namespaces of its own (agent/sandbox.ts: a private /tmp, /dev/shm,
 * /dev and process view): `auto` where the machine allows, `required` (else refuse to start), `off`.
 */
export const NAMESPACES_MODES = ['auto', 'required', 'off'] as const;
export type NamespacesMode = (typeof NAMESPACES_MODES)[number];

export { DEFAULT_TMP_BYTES } from '../domain/private-tmp.js';

/** Whose variables tell a job its devices: CUDA_VISIBLE_DEVICES (nvidia), ROCR_VISIBLE_DEVICES (amd). */
const VENDOR = Type.Union([Type.Literal('nvidia'), Type.Literal('amd'), Type.Literal('none')]);

/** Devices by id, each with its device files (`/dev/nvidia0`): what its job alone may open. */
const DEVICE_LIST = Type.Array(
  strict({
    id: Type.String({ minLength: 1, pattern: '^[A-Za-z0-9][-A-Za-z0-9_.:]*$' }),
    files: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  }),
  { maxItems: 1024 },
);

const FactorySchema = strict({
  kind: Type.Union(FACTORY_KINDS.map((k) => Type.Literal(k))),
  capacity: Type.Optional(Capacity),
  /** local: `auto` (default) where the machine allows; `required`: else refuse to start; `off`. */
  cgroups: Type.Optional(Type.Union(CGROUPS_MODES.map((m) => Type.Literal(m)))),
  /** local, with cgroups: the most processes (and threads) one job may have at once (default 4096). */
  pidsLimit: Type.Optional(Type.Integer({ minimum: 1 })),
  /** local: namespaces per job, `auto` (default) where the machine allows, `required`, or `off`. */
  namespaces: Type.Optional(Type.Union(NAMESPACES_MODES.map((m) => Type.Literal(m)))),
  /** local, with namespaces: the size of a job's private /tmp, and of its /dev/shm (default 1Gi). */
  tmpSize: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
  /** local, with namespaces: `host` (default), or `none`: a job reaches no network, not even the server. */
  network: Type.Optional(Type.Union([Type.Literal('host'), Type.Literal('none')])),
  /**
   * local, slurm: each job (slurm: each worker) under a uid of its own (`auto`, default, where the
   * server can switch users), `required` (else refuse to start), or `off` (docs/SECURITY.md).
   */
  isolation: Type.Optional(Type.Union(ISOLATION_MODES.map((m) => Type.Literal(m)))),
  runAs: Type.Optional(
    strict({
      /** local, slurm, isolated: the uids (and gids, the same numbers) its jobs run under. */
      uids: Type.Optional(Type.String({ minLength: 1 })),
      /**
       * local, slurm: projects whose jobs run as a Unix user (slurm: of the cluster, `sbatch
       * --uid`) instead of a uid of their own: project name → user name. Their files on shared
       * filesystems are that user's.
       */
      projects: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }))),
    }),
  ),
  /**
   * local: the devices (GPUs and the like) of its machine, by kind (a resource name): a count, a
   * list of ids with their device files, or `detect: nvidia` (docs/DEVICES.md).
   */
  devices: Type.Optional(
    Type.Record(
      Type.String({ minLength: 1 }),
      Type.Union([
        strict({ count: Type.Integer({ minimum: 0, maximum: 1024 }), vendor: Type.Optional(VENDOR) }),
        strict({ detect: Type.Literal('nvidia') }),
        DEVICE_LIST,
        strict({
          vendor: VENDOR,
          list: DEVICE_LIST,
        }),
      ]),
    ),
  ),
  /**
   * slurm: requests passed to Slurm as generic resources, by resource name: `{ gpu: gpu }` turns a
   * job's `gpu=2` into `--gres=gpu:2` (per worker member), and the job sees what Slurm binds.
   */
  gres: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }))),
  /** slurm: the partition its workers are submitted to (the cluster's default when absent). */
  partition: Type.Optional(Type.String({ minLength: 1 })),
  /** slurm: each worker's time limit (`2h`, `90m`, or seconds; default 1h); see timeLimitSeconds. */
  timeLimit: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
  account: Type.Optional(Type.String({ minLength: 1 })),
  qos: Type.Optional(Type.String({ minLength: 1 })),
  cpusPerTask: Type.Optional(Type.Integer({ minimum: 1 })),
  /** slurm: further sbatch arguments, e.g. `["--constraint=gpu"]`. */
  sbatchArgs: Type.Optional(Type.Array(Type.String())),
  /** slurm: the cluster's slurm.conf (SLURM_CONF), when not the default. */
  slurmConf: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * slurm: where each node's agents keep the OCI images its jobs run in, shared by the agents of
   * the node (default /var/cache/berth/images); `imageCacheSize`: the most it holds (default 20Gi).
   */
  imageCache: Type.Optional(Type.String({ minLength: 1 })),
  imageCacheSize: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 0 })])),
  /** slurm: how a node starts berth's agent (default: this server's node and berth). */
  agentCommand: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  /**
   * Where jobs' working directories are made. slurm: on a node (default its temporary directory).
   * local: default DATA/workers; a filesystem of its own keeps a job that fills it from the
   * server's writes (docs/SECURITY.md).
   */
  workRoot: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * slurm: a directory the server and every node see at the same path (NFS, Lustre, …). Set, each
   * worker's batch script runs its job's command itself, with no `berth agent` (no Node.js on the
   * nodes): output and exit status pass through this directory (docs/SLURM.md, "Direct workers").
   */
  sharedDir: Type.Optional(Type.String({ minLength: 1 })),
  /** slurm: how often squeue is asked about the workers (default 2 s). */
  pollSeconds: Type.Optional(Type.Number({ minimum: 0.1, maximum: 300 })),
  /**
   * local, slurm: a PEM file of the certificates its agents trust for the server's (besides Node's
   * built-in CAs); default: tls.cert when the server serves HTTPS.
   */
  ca: Type.Optional(Type.String({ minLength: 1 })),
});
const TargetSchema = strict({
  factory: Type.String(),
  privilege: Type.Optional(Privilege),
  /** Pilot workers: a worker runs the target's jobs one after another (remote agents only). */
  reuse: Type.Optional(Type.Boolean()),
  /** How long a pilot waits, idle, for its next job before it is destroyed (default 5m). */
  idleTimeout: Type.Optional(Type.Union([Type.String(), Type.Integer({ minimum: 1 })])),
  /** The timeout of a job on this target that gives none (default: none, as Slurm's DefaultTime). */
  defaultTimeout: Type.Optional(Type.Union([Type.String(), Type.Integer({ minimum: 1 })])),
  /**
   * What a job on this target requests of a resource it names no request for, per worker (as
   * Kubernetes' LimitRange `default`): `{ memory: 1Gi }` gives a job that asked for nothing a
   * ceiling its cgroup enforces. A resource in `maxRequests` and not here defaults to its maximum.
   */
  defaultRequests: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
  /** The most a job on this target may request of a resource, per worker: more is refused (422). */
  maxRequests: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
  /** The OCI image its jobs run in when they name none (`registry/name:tag`); default: none. */
  image: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * The registries (`host[:port]`) its jobs' images may come from; default: any. Plain HTTP is
   * spoken only to the loopback's and to `images.insecureRegistries`.
   */
  registries: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
});
const ResourceSchema = strict({
  kind: Type.Union(RESOURCE_KINDS.map((k) => Type.Literal(k))),
  capacity: Capacity,
  privilege: Type.Optional(Privilege),
  url: Type.Optional(Type.String()),
  /** postgres: prefix of the databases and roles it makes (default: one per installation). */
  prefix: Type.Optional(Type.String({ pattern: '^[a-z_][a-z0-9_]{0,40}$' })),
  create: Type.Optional(Type.String()),
  destroy: Type.Optional(Type.String()),
  /** token: what its token may do in the job's project (default `read`; see domain/tokens.ts). */
  access: Type.Optional(Type.Union(PROJECT_TOKEN_ACCESS.map((a) => Type.Literal(a)))),
});

/** A size in bytes: a quantity (`100Mi`, `1G`) or a number. */
const Bytes = Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 0 })]);

/** Jobs' artifacts: where their files live, how much one run may keep, and for how long. */
const ArtifactsSchema = strict({
  /** Default DATA_DIR/artifacts; shared by every replica on PostgreSQL. */
  dir: Type.Optional(Type.String({ minLength: 1 })),
  /** Bytes one run of a job may keep: a quantity (`100Mi`, `1G`) or a number (default 100Mi). */
  maxBytesPerJob: Type.Optional(Bytes),
  /** Files one run of a job may keep, empty ones too (default 1000). */
  maxFilesPerJob: Type.Optional(Type.Integer({ minimum: 0 })),
  /** How long after its job ended an artifact is kept: `30d`, `12h`, or seconds (default 30d). */
  retention: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
});

/** OCI images (images/): where they are kept on this machine, how much of it, and how pulled. */
const ImagesSchema = strict({
  /** Default DATA_DIR/images. */
  dir: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Where each job in an image gets its writable layer (default DATA_DIR/image-layers): a local
   * filesystem overlayfs writes to (ext4, xfs, btrfs, tmpfs), not NFS nor another overlay.
   */
  layersDir: Type.Optional(Type.String({ minLength: 1 })),
  /** The most the unpacked images may take: a quantity (`20Gi`) or bytes (default 20Gi). */
  cacheBytes: Type.Optional(Bytes),
  /** Registries (`host[:port]`) spoken to over plain HTTP besides the loopback's (default: none). */
  insecureRegistries: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
  /**
   * How long the digest a tag stood for is kept before its registry is asked again, in seconds
   * (default 10; 0: asked for every job).
   */
  tagCacheSeconds: Type.Optional(Type.Number({ minimum: 0, maximum: 86_400 })),
});

/** Jobs' output. */
const LogsSchema = strict({
  /** Bytes of output one run of a job keeps; past it the rest is dropped (default 100Mi). */
  maxBytesPerJob: Type.Optional(Bytes),
});

/** How long one kind of history is kept (service/upkeep/retention.ts): `90d`, `1y`, seconds, or `forever`. */
const RetentionPeriod = Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })]);

/** How long ended jobs, the audit log and the usage ledger's allocations are kept. */
const RetentionSchema = strict({
  /** Ended jobs with their events, attempts, logs and artifacts (default 90d). */
  jobs: Type.Optional(RetentionPeriod),
  /** The audit log's rows (default 1y). */
  audit: Type.Optional(RetentionPeriod),
  /** The usage ledger's rows per allocation; its hourly and daily rollups are kept (default 90d). */
  ledger: Type.Optional(RetentionPeriod),
});

/** The most samples the queue history keeps per cluster queue, whatever `queueHistory` asks for. */
export const MAX_HISTORY_SAMPLES = 100_000;

/** The cluster queues' figures over time (service/live/queue-history.ts): how often sampled, how long kept. */
const QueueHistorySchema = strict({
  /** Seconds between samples (default 10; fractions allowed, for tests). */
  sampleSeconds: Type.Optional(Type.Number({ minimum: 0.05, maximum: 3600 })),
  /** How far back samples are kept: `6h`, `1d`, or seconds (default 6h). */
  keep: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
});

/** GET /metrics (docs/OPERATIONS.md): which series the server keeps beyond the bounded ones. */
const MetricsSchema = strict({
  /** Series per project (pending, admitted, running, admission wait): a label per tenant (default false). */
  perProject: Type.Optional(Type.Boolean()),
});

/** HTTPS: the server's certificate (PEM, with its chain) and private key (PEM), as file paths. */
const TlsSchema = strict({
  cert: Type.String({ minLength: 1 }),
  key: Type.String({ minLength: 1 }),
});

export const ConfigSchema = strict({
  listen: Type.Optional(Type.String()),
  tls: Type.Optional(TlsSchema),
  /** Plain HTTP on a non-loopback address: refused unless set (tokens would cross the network). */
  insecureHttp: Type.Optional(Type.Boolean()),
  /** The URL other machines reach the server at (agents of remote workers); default: listen's. */
  publicUrl: Type.Optional(Type.String()),
  dataDir: Type.Optional(Type.String()),
  database: Type.Optional(Type.String()),
  defaultTarget: Type.Optional(Type.String()),
  logLevel: Type.Optional(
    Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((l) => Type.Literal(l))),
  ),
  heartbeatSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 3600 })),
  /** Replicas on PostgreSQL: how long the leader's lease lasts, and how often it is renewed. */
  leaseSeconds: Type.Optional(Type.Integer({ minimum: 3, maximum: 3600 })),
  renewSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 1200 })),
  graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600 })),
  /** API requests per second one token may make, and one job's token (0: no limit). */
  rateLimit: Type.Optional(
    Type.Object(
      {
        requestsPerSecond: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
        jobRequestsPerSecond: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
      },
      { additionalProperties: false },
    ),
  ),
  /**
   * The key that seals the secrets berth keeps (a project's registry passwords), 32 random bytes
   * in base64, in a file only the server reads: default DATA_DIR/secret.key, made at first need.
   * Replicas on PostgreSQL must share one: set it to the same file on each.
   */
  secretKeyFile: Type.Optional(Type.String({ minLength: 1 })),
  factories: Type.Optional(Type.Record(Type.String(), FactorySchema)),
  targets: Type.Optional(Type.Record(Type.String(), TargetSchema)),
  resources: Type.Optional(Type.Record(Type.String(), ResourceSchema)),
  artifacts: Type.Optional(ArtifactsSchema),
  images: Type.Optional(ImagesSchema),
  logs: Type.Optional(LogsSchema),
  queueHistory: Type.Optional(QueueHistorySchema),
  retention: Type.Optional(RetentionSchema),
  metrics: Type.Optional(MetricsSchema),
  /** `berth exec` and `port-forward` sessions open at once: per user, and on this server. */
  sessions: Type.Optional(
    strict({
      maxPerUser: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
      maxPerServer: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    }),
  ),
  /** Interactive jobs (`berth run -it`): how long they wait for a terminal, and for anything on it. */
  interactive: Type.Optional(
    strict({
      /** With no input and no output this long, an interactive job ends (`1h`, or seconds; default 1h). */
      idleTimeout: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
      /** With no terminal attached this long (a dropped connection), it ends (default 10m). */
      detachGrace: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Integer({ minimum: 1 })])),
    }),
  ),
});

export type RawConfig = Static<typeof ConfigSchema>;
/** A factory as berth.yaml writes it. */
export type RawFactory = Static<typeof FactorySchema>;
export type FactoryConfig = Omit<RawFactory, 'timeLimit' | 'runAs' | 'tmpSize' | 'imageCacheSize'> & {
  capacity: number;
  /** slurm: `imageCacheSize` in bytes, when set. */
  imageCacheBytes?: number;
  /** local: `tmpSize` in bytes (its default when absent). */
  tmpBytes?: number;
  /** local, slurm: `runAs.uids`, parsed (its default when absent). */
  jobUids?: UidRange;
  /** slurm: `runAs.projects`, project → Unix user name. */
  projectUsers?: Record<string, string>;
  /** slurm: `timeLimit` in seconds. */
  timeLimitSeconds?: number;
};
export type TargetConfig = Omit<
  Static<typeof TargetSchema>,
  'idleTimeout' | 'defaultTimeout' | 'defaultRequests' | 'maxRequests'
> & {
  /** With `reuse`: `idleTimeout` in seconds. */
  idleTimeoutSeconds?: number;
  /** `defaultTimeout` in seconds, when set. */
  defaultTimeoutSeconds?: number;
  /** Requests given to a job that names none of the resource (a maximum's resource included), as written. */
  defaultRequests?: Record<string, string>;
  /** The most a job may request, per resource (parsed amounts: milli-units for cpu). */
  maxRequests?: Record<string, number>;
};
export type ResourceConfig = Static<typeof ResourceSchema>;

/** The server's certificate and key files (absolute paths) and the settings that named them. */
export interface TlsConfig {
  cert: string;
  key: string;
  /** How errors name each file: `tls.cert` or `--tls-cert`, `tls.key` or `--tls-key`. */
  keys: { cert: string; key: string };
}

/** The configuration with every default filled in. */
export interface Config {
  listen: string;
  /** HTTPS with these files; null: plain HTTP. */
  tls: TlsConfig | null;
  /** Plain HTTP allowed on a non-loopback address (the server warns at start). */
  insecureHttp: boolean;
  /** What agents of remote workers reach the server at; null: the listening address. */
  publicUrl: string | null;
  dataDir: string;
  database: string;
  defaultTarget: string;
  logLevel: string;
  /** A worker silent for this long is declared lost. */
  heartbeatSeconds: number;
  /** The leader's lease (replicas on PostgreSQL): it lasts this long unless renewed… */
  leaseSeconds: number;
  /** …and is renewed this often (at most a third of the lease). */
  renewSeconds: number;
  /** Between SIGTERM and SIGKILL when a job is stopped. */
  graceSeconds: number;
  /** API requests per second one token may make, and one job's token (its agent's lifeline aside); 0: no limit. */
  rateLimit: { requestsPerSecond: number; jobRequestsPerSecond: number };
  /** `secretKeyFile`, an absolute path; null: DATA_DIR/secret.key (SQLite), none (PostgreSQL). */
  secretKeyFile: string | null;
  factories: Record<string, FactoryConfig>;
  targets: Record<string, TargetConfig>;
  resources: Record<string, ResourceConfig>;
  artifacts: ArtifactsConfig;
  /** OCI images: their directory (null: DATA_DIR/images), its bound, and the registries spoken to in plain HTTP. */
  images: {
    dir: string | null;
    layersDir: string | null;
    cacheBytes: number;
    insecureRegistries: string[];
    tagCacheSeconds: number;
  };
  /** Jobs' output: the most bytes one run keeps. */
  logs: { maxBytesPerJob: number };
  /** The queues' figures over time: a sample every `sampleSeconds`, kept for `keepSeconds`. */
  queueHistory: { sampleSeconds: number; keepSeconds: number };
  /** How long each kind of history is kept, in seconds; null: forever. */
  retention: { jobs: number | null; audit: number | null; ledger: number | null };
  /** GET /metrics: series per project too (`metrics.perProject`). */
  metrics: { perProject: boolean };
  sessions: SessionLimits;
  /** Interactive jobs' bounds, in seconds (`interactive`). */
  interactive: { idleTimeoutSeconds: number; detachGraceSeconds: number };
}

/** `artifacts` with its defaults filled in. */
export interface ArtifactsConfig {
  /** An absolute path; null: DATA_DIR/artifacts. */
  dir: string | null;
  /** The most bytes of artifacts one run of a job may keep. */
  maxBytesPerJob: number;
  /** The most artifacts (files, empty ones too) one run of a job may keep. */
  maxFilesPerJob: number;
  /** Artifacts of jobs that ended longer ago than this are removed. */
  retentionSeconds: number;
}
