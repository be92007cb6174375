/**
 * `berth server`: load config, open the store, bootstrap, serve, and shut down cleanly.
 *
 * On SQLite the server is alone: it runs the controller itself. On PostgreSQL it is one replica
 * of possibly several (replicas/replica-node.ts): it serves the API at once and runs the
 * controller only while it holds the leader's lease.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../api/app.js';
import { fileExposure, passwordKeys } from '../config/file-exposure.js';
import { isLoopback, loadConfigFile, parseListen, resolveConfig } from '../config/load.js';
import { targetWarnings } from '../config/targets.js';
import type { Config, RawConfig } from '../config/schema.js';
import type { Controller } from '../controller/controller.js';
import type { ControllerPort } from '../controller/port.js';
import { describeEnforcement } from '../factories/cgroups.js';
import { isolationOf } from '../factories/isolation.js';
import { SecretBox, SecretKeyError } from '../store/secret-box.js';
import { devicesOf } from '../factories/devices.js';
import { interactiveRefused } from './interactive-support.js';
import { imageSupport } from './image-support.js';
import { deviceCounts } from '../domain/devices.js';
import type { Factory } from '../factories/factory.js';
import { Metrics } from '../metrics/metrics.js';
import { ReplicaNode } from '../replicas/replica-node.js';
import { ChangeFeed } from '../service/live/change-feed.js';
import { Notices } from '../service/live/notices.js';
import { controllerHears, feedHears } from '../service/live/notice-subscribers.js';
import type { JobRuntime, ServiceContext, With } from '../service/context.js';
import { loadProjectWeights } from '../service/tenancy/projects.js';
import { TokenCache } from '../service/tenancy/token-cache.js';
import { GroupCommit } from '../store/group-commit.js';
import { ProjectCache } from '../service/tenancy/project-cache.js';
import { FileLogStore, shardLogs, type LogStore } from '../store/log-store.js';
import { PgLogStore } from '../store/pg-log-store.js';
import { ArtifactFiles } from '../store/artifact-files.js';
import { scheduleArtifactSweeps } from '../service/jobs/artifacts.js';
import { scheduleRetentionSweeps } from '../service/upkeep/retention.js';
import { QueueHistory } from '../service/live/queue-history.js';
import { ConfigError } from '../domain/errors.js';
import { initSetting } from '../store/queries/settings.js';
import type { Store } from '../store/store.js';
import { VERSION } from '../version.js';
import { bootstrap } from './bootstrap.js';
import { buildController, type ControllerDeps } from './build-controller.js';
import { secureDataDir } from './data-dir.js';
import { announceServer, withdrawServer } from './discovery.js';
import { NewerStoreError } from '../store/migrations/index.js';
import { openStore, redactUrl } from './open-store.js';
import { checkFactoryCas, loadServerTls, tlsWarnings, type ServerTls } from './tls.js';

export interface ServerOptions {
  configFile?: string;
  dataDir?: string;
  listen?: string;
  /** `sqlite` or a postgres:// URL; overrides the config file's `database`. */
  database?: string;
  /** HTTPS: the certificate and key files; override the config file's `tls`. */
  tlsCert?: string;
  tlsKey?: string;
  /** Allows plain HTTP on a non-loopback address (the config file's `insecureHttp`). */
  insecureHttp?: boolean;
  /** API requests per second per token; overrides the config file's `rateLimit` (0: none). */
  requestsPerSecond?: number;
  /** The same per job's token; overrides `rateLimit.jobRequestsPerSecond` (0: none). */
  jobRequestsPerSecond?: number;
  /** Where human-readable lines go: start-up, and a replica's changes of role (stdout by default). */
  print?: (line: string) => void;
  /**
   * A newer berth migrated the replicas' database while this one ran (store/pg-schema-gate.ts):
   * nothing this replica sends reaches it any more. `berth server` stops, saying `line`.
   */
  onNewerStore?: (line: string) => void;
  /**
   * How long a stopping server lets the requests in flight finish before it ends their
   * connections (default REQUESTS_GRACE_MS).
   */
  requestsGraceMs?: number;
}

/**
 * A stopping server answers no new request (503) and waits this long for those in flight; then it
 * ends their connections, so that a client that stalls mid-request — or left without a word —
 * cannot keep a server from stopping, nor from closing its store.
 */
export const REQUESTS_GRACE_MS = 10_000;

export interface RunningServer {
  url: string;
  config: Config;
  /** The controller port the services use now: the controller's own, or a follower's. */
  readonly controller: ControllerPort;
  /** The factories of the controller running here, by name (none on a follower). */
  readonly factories: ReadonlyMap<string, Factory>;
  /** The services' context, for in-process benchmarks and tests. */
  context: ServiceContext;
  close(): Promise<void>;
}

/** A random id made on first start and kept in the data directory (it moves with it). */
function fileInstallationId(dataDir: string): string {
  const file = join(dataDir, 'installation.id');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const id = randomBytes(4).toString('hex');
    writeFileSync(file, id + '\n', { mode: 0o600 });
    return id;
  }
}

/** The installation's id: in the data directory on SQLite, in the store on PostgreSQL (shared). */
async function installationId(store: Store, dataDir: string): Promise<string> {
  if (store.dialect === 'sqlite') return fileInstallationId(dataDir);
  return initSetting(store.db, 'installation', randomBytes(4).toString('hex'));
}

/** The config file: --config, else $BERTH_CONFIG, else ./berth.yaml when it exists. */
function configPath(opts: ServerOptions): string | undefined {
  if (opts.configFile) return opts.configFile;
  if (process.env.BERTH_CONFIG) return process.env.BERTH_CONFIG;
  return existsSync('berth.yaml') ? 'berth.yaml' : undefined;
}

const NO_FIGURES = { usage: {}, borrowed: {}, pending: 0, admitted: 0, running: 0 };

/** The artifacts' directory (artifacts.dir, else DATA/artifacts), made now: if it cannot be, the server stops. */
async function artifactFiles(config: Config, dataDir: string, file?: string): Promise<ArtifactFiles> {
  const files = new ArtifactFiles(config.artifacts.dir ?? join(dataDir, 'artifacts'));
  try {
    await files.prepare();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new ConfigError('artifacts.dir', `cannot make directory ${files.dir}: ${code}`, file);
  }
  return files;
}

/** What the start-up lines warn of: plain HTTP off the loopback, a certificate clients refuse. */
function transportWarnings(config: Config, tls: ServerTls | null, url: string): string[] {
  if (tls && config.tls) return tlsWarnings(tls, config.publicUrl ?? url, config.tls.keys.cert);
  if (!config.insecureHttp || isLoopback(parseListen(config.listen).host)) return [];
  return [
    `warning: serving plain HTTP on ${config.listen} (insecureHttp): tokens and job logs cross the network unencrypted; serve HTTPS with tls: {cert, key}`,
  ];
}

/**
 * In DATA/logs once its flat logs have been moved: later starts skip the listing. DATA/logs holds
 * a directory per thousand jobs (1,030 at 10 million in bench/history.ts, where the listing took
 * 8–28 ms of each restart against 4–10 at 10,000), so a start read more of it the longer the
 * history. Only a berth from before the directories writes flat logs, and it leaves no mark.
 */
export const LOGS_MOVED_MARK = '.moved-into-directories';

/**
 * Logs of an installation from before they had directories of a thousand jobs, moved into them
 * (store/log-store.ts), with progress: a rename each, before the server serves. Once.
 */
async function moveFlatLogs(dir: string, print: (line: string) => void): Promise<void> {
  const mark = join(dir, LOGS_MOVED_MARK);
  if (existsSync(mark)) return;
  const moved = await shardLogs(dir, (n) =>
    print(`job logs: moved ${n.toLocaleString('en')} into directories…`),
  );
  if (moved > 0)
    print(`job logs: moved ${moved.toLocaleString('en')} from ${dir} into a directory per thousand jobs`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(mark, '', { mode: 0o600 });
}

/**
 * The box that seals the secrets the server keeps (store/secret-box.ts), opened at first need:
 * the key in `secretKeyFile`, else DATA_DIR/secret.key, made then — on SQLite only: replicas on
 * PostgreSQL must share one key, which a file of one replica's own would not be.
 */
function secretsOf(config: Config, dialect: string, dataDir: string): () => SecretBox {
  const file = config.secretKeyFile ?? (dialect === 'sqlite' ? join(dataDir, 'secret.key') : null);
  let box: SecretBox | undefined;
  return () => {
    if (file === null)
      throw new SecretKeyError(
        'replicas on PostgreSQL share one key: set secretKeyFile in berth.yaml to a file each replica reads (docs/IMAGES.md)',
      );
    return (box ??= SecretBox.open(file, config.secretKeyFile === null));
  };
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const print = opts.print ?? ((line: string) => process.stdout.write(line + '\n'));
  const file = configPath(opts);
  const raw: RawConfig = file ? loadConfigFile(file) : {};
  // Before anything starts: a config file every user (every job) may read with a password in it,
  // or may write, stops the server, naming its mode and the fix.
  const exposure = file ? fileExposure(file, statSync(file), passwordKeys(raw)) : { warnings: [] };
  if (exposure.refusal) throw new ConfigError('', exposure.refusal);
  const overrides = {
    listen: opts.listen,
    dataDir: opts.dataDir,
    database: opts.database,
    tlsCert: opts.tlsCert,
    tlsKey: opts.tlsKey,
    insecureHttp: opts.insecureHttp,
    requestsPerSecond: opts.requestsPerSecond,
    jobRequestsPerSecond: opts.jobRequestsPerSecond,
  };
  const config = resolveConfig(raw, overrides, file);
  // Before anything starts: a bad certificate or key stops the server, naming its setting.
  const tls = config.tls ? loadServerTls(config.tls, file) : null;
  checkFactoryCas(config, file);
  const dataDir = resolve(config.dataDir);
  const dataDirWarnings = secureDataDir(dataDir);
  // Before anything starts: `cgroups: required` or `isolation: required` that this machine cannot
  // meet stops the server.
  const enforcement = describeEnforcement(config, dataDir, file);
  const isolation = isolationOf(config, file);
  const devices = devicesOf(config, file);
  const images = imageSupport(config, dataDir, isolation);
  const store = await openStore(config, dataDir, print);
  const metrics = new Metrics(config.metrics);
  store.observer = metrics.store;
  metrics.providersKnown(Object.keys(config.factories), Object.keys(config.resources));
  const changes = new ChangeFeed((err) => app?.log.error({ err }, 'change feed: a subscriber failed'));
  // What the services commit is heard by the live streams, then (once it runs) the controller.
  const notices = new Notices();
  notices.subscribe(feedHears(changes));
  const ctx: ServiceContext = {
    store,
    secrets: secretsOf(config, store.dialect, dataDir),
    now: Date.now,
    tokenCache: new TokenCache(),
    projectCache: new ProjectCache(changes, Date.now),
    groupCommit: new GroupCommit(store),
    metrics,
    changes,
    notices,
  };
  let app: FastifyInstance | undefined;
  let controller: Controller | undefined;
  let replica: ReplicaNode | undefined;
  let logs: LogStore | undefined;
  let url = '';
  let stopSweeps: (() => Promise<void>) | undefined;
  let history: QueueHistory | undefined;
  try {
    const first = await bootstrap(ctx, dataDir);
    app = await buildApi(ctx, {
      version: VERSION,
      logger: { level: config.logLevel },
      ...(tls ? { https: { cert: tls.cert, key: tls.key } } : {}),
      requestsPerSecond: config.rateLimit.requestsPerSecond,
      jobRequestsPerSecond: config.rateLimit.jobRequestsPerSecond,
      sessions: config.sessions,
    });
    const log = app.log;
    if (store.dialect === 'sqlite') await moveFlatLogs(join(dataDir, 'logs'), print);
    logs =
      store.dialect === 'sqlite'
        ? new FileLogStore(join(dataDir, 'logs'))
        : new PgLogStore(store.db, (err) => log.error({ err }, 'job logs'));
    const runtime: JobRuntime = {
      targets: config.targets,
      defaultTarget: config.defaultTarget,
      resourceTypes: config.resources,
      workerTimeLimits: Object.fromEntries(
        Object.entries(config.targets).flatMap(([name, t]) => {
          const limit = config.factories[t.factory]?.timeLimitSeconds;
          return limit === undefined ? [] : [[name, limit]];
        }),
      ),
      workerCapacity: Object.fromEntries(
        Object.entries(config.targets).flatMap(([name, t]) => {
          const capacity = config.factories[t.factory]?.capacity;
          return capacity === undefined ? [] : [[name, capacity]];
        }),
      ),
      isolation: Object.fromEntries([...isolation].map(([name, i]) => [name, i.summary])),
      imagesRefused: images.refused,
      interactiveRefused: interactiveRefused(config, isolation),
      insecureRegistries: config.images.insecureRegistries,
      devices: Object.fromEntries(
        [...devices].map(([name, d]) => [name, { counts: deviceCounts(d.inventory), summary: d.summary }]),
      ),
      controller: undefined as unknown as ControllerPort, // set below, before anything reads it
      logs,
      artifacts: {
        files: await artifactFiles(config, dataDir, file),
        maxBytesPerJob: config.artifacts.maxBytesPerJob,
        maxFilesPerJob: config.artifacts.maxFilesPerJob,
        retentionSeconds: config.artifacts.retentionSeconds,
      },
    };
    const live: With<'runtime'> = Object.assign(ctx, { runtime });
    ctx.queueStatus = (name) => runtime.controller.queueFigures(name) ?? NO_FIGURES;
    notices.subscribe(controllerHears(() => runtime.controller));
    metrics.observe({
      queues: () => runtime.controller.queueFiguresAll(),
      factories: () => runtime.controller.factoryFigures(),
      leadership: () =>
        ctx.cluster
          ? { leading: ctx.cluster.role() === 'leader', term: ctx.cluster.term() }
          : { leading: true, term: 0 },
      model: () => runtime.controller.modelFigures(),
    });
    const deps: ControllerDeps = {
      config,
      file,
      dataDir,
      isolation,
      devices,
      installationId: await installationId(store, dataDir),
      ctx,
      logs,
      metrics,
      // What agents (on other machines too) and jobs reach the server at.
      url: () => config.publicUrl ?? url,
      onError: (err, what) => log.error({ err }, `controller: ${what}`),
      onJobChanged: (id, project, state, reason) =>
        changes.publish({ kind: 'job', id, project, state, reason }),
    };

    if (store.dialect === 'sqlite') {
      controller = buildController(deps, { groupCommit: ctx.groupCommit! });
      runtime.controller = controller;
      await loadProjectWeights(ctx, controller);
    } else {
      replica = new ReplicaNode({
        ctx,
        url: config.database,
        apiUrl: () => url,
        leaseMs: config.leaseSeconds * 1000,
        renewMs: config.renewSeconds * 1000,
        buildController: (writes) => (controller = buildController(deps, writes)),
        setController: (port) => {
          runtime.controller = port;
          if (port !== controller) controller = undefined;
        },
        log: {
          info: (msg) => print(`${new Date().toISOString()} ${msg}`),
          error: (err, what) => {
            if (err instanceof NewerStoreError && opts.onNewerStore) opts.onNewerStore(err.message);
            else log.error({ err }, what);
          },
        },
      });
      await replica.prepare();
      if (logs instanceof PgLogStore) await logs.listen(replica.bus);
    }

    const { host, port } = parseListen(config.listen);
    await app.listen({ host, port });
    const address = app.server.address();
    const actualPort = typeof address === 'object' && address ? address.port : port;
    url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${actualPort}`;
    if (controller) await controller.start();
    else await replica?.start();
    history = new QueueHistory(ctx, config.queueHistory, (err) => log.error({ err }, 'queue history'));
    ctx.queueHistory = history;
    history.start();
    const stopArtifactSweeps = scheduleArtifactSweeps(live, (err) =>
      log.error({ err }, 'artifacts: the retention sweep'),
    );
    const stopRetentionSweeps = scheduleRetentionSweeps(
      ctx,
      config.retention,
      (err) => log.error({ err }, 'retention: the sweep'),
      (line) => print(`${new Date().toISOString()} ${line}`),
    );
    stopSweeps = async () => {
      await stopArtifactSweeps();
      await stopRetentionSweeps();
    };
    // The local CLI trusts the server's own certificate, as the local agents do.
    announceServer({ url, pid: process.pid, dataDir, ...(config.tls ? { ca: config.tls.cert } : {}) });
    print(`berth ${VERSION} listening on ${url}`);
    for (const line of transportWarnings(config, tls, url)) print(line);
    for (const line of [...exposure.warnings, ...dataDirWarnings]) print(line);
    print(`data directory: ${dataDir}`);
    for (const [name, e] of enforcement) print(`local factory "${name}": ${e.summary}`);
    for (const [name, i] of isolation) {
      const kind = config.factories[name]?.kind;
      if (kind === 'local' || kind === 'slurm') print(`${kind} factory "${name}": ${i.summary}`);
    }
    if (images.layers) print(`images: local targets refuse them: ${images.layers}`);
    for (const [name, d] of devices) {
      const all = Object.values(d.inventory).flatMap((k) => k.devices);
      const files = all.some((dev) => dev.files.length > 0);
      const kept =
        all.length === 0
          ? 'a job that asks for one is refused'
          : !files
            ? 'assigned; no device files listed, so nothing to keep jobs from'
            : isolation.get(name)?.sandbox
              ? 'each job can open only its own (its own /dev)'
              : enforcement.get(name)?.devices
                ? 'each job can open only its own (devices cgroup)'
                : 'assigned, not enforced: jobs can open every device file (no devices cgroup, no namespaces)';
      print(`local factory "${name}": devices ${d.summary}; ${kept}`);
    }
    for (const line of targetWarnings(config.targets)) print(line);
    if (store.dialect !== 'sqlite') {
      const role = replica?.elector.leading ? `leader (term ${replica.elector.term})` : 'follower';
      print(`database: ${redactUrl(config.database)}; this replica is the ${role}`);
    }
    print(`dashboard: ${url}/ (sign in with a token)`);
    if (first) {
      print(`first start: created admin user, cluster queue "default" and project "default"`);
      print(`admin token (shown once; also in ${first.tokenFile}, mode 0600):`);
      print(`  ${first.adminToken}`);
    }
    const running = app;
    const runningLogs = logs;
    let closing: Promise<void> | undefined;
    return {
      url,
      config,
      get controller() {
        return runtime.controller;
      },
      get factories() {
        return controller?.factories ?? new Map<string, Factory>();
      },
      context: ctx,
      close: () =>
        (closing ??= (async () => {
          withdrawServer(dataDir);
          history?.stop();
          await stopSweeps?.();
          if (replica) await replica.stop();
          else await controller?.stop();
          runningLogs.close();
          const cut = setTimeout(
            () => running.server.closeAllConnections(),
            opts.requestsGraceMs ?? REQUESTS_GRACE_MS,
          );
          try {
            await running.close();
          } finally {
            clearTimeout(cut);
          }
          await store.close();
        })()),
    };
  } catch (e) {
    history?.stop();
    await stopSweeps?.();
    if (replica) await replica.stop().catch(() => {});
    else await controller?.stop();
    logs?.close();
    await app?.close();
    await store.close();
    throw e;
  }
}

/** Runs until SIGINT or SIGTERM, then closes the listener and the store before exiting. */
export async function runServer(opts: ServerOptions = {}): Promise<void> {
  let newer: ((line: string) => void) | undefined;
  const server = await startServer({ ...opts, onNewerStore: (line) => newer?.(line) });
  await new Promise<void>((resolveStop) => {
    const stop = (signal: string) => {
      process.stdout.write(`${signal}: shutting down\n`);
      resolveStop();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
    // Once: the elector and the services may each meet the refusal.
    newer = (line) => {
      newer = undefined;
      process.stderr.write(`berth: ${line}\n`);
      process.exitCode = 1;
      resolveStop();
    };
  });
  await server.close();
}
