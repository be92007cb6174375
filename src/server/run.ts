/** `berth server`: load config, open the store, bootstrap, serve, and shut down cleanly. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../api/app.js';
import { ConfigError } from '../domain/errors.js';
import type { ServiceContext } from '../service/context.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/store.js';
import { VERSION } from '../version.js';
import { Controller } from '../controller/controller.js';
import { LogStore } from '../controller/log-store.js';
import { createFactories } from '../factories/index.js';
import { Scheduler } from '../scheduler/index.js';
import { ChangeFeed } from '../service/change-feed.js';
import { TokenCache } from '../service/token-cache.js';
import { loadProjectWeights } from '../service/projects.js';
import { ProjectTokenMinter } from '../service/project-tokens.js';
import { createWells } from '../wells/index.js';
import { GroupCommit } from '../store/group-commit.js';
import { Metrics } from '../metrics/metrics.js';
import { bootstrap } from './bootstrap.js';
import { loadConfigFile, parseListen, resolveConfig, type Config, type RawConfig } from './config.js';
import { announceServer, withdrawServer } from './discovery.js';

export interface ServerOptions {
  configFile?: string;
  dataDir?: string;
  listen?: string;
  /** Where human-readable start-up lines go (stdout by default). */
  print?: (line: string) => void;
}

export interface RunningServer {
  url: string;
  config: Config;
  controller: Controller;
  /** The services' context, for in-process benchmarks and tests. */
  context: ServiceContext;
  close(): Promise<void>;
}

/** A random id made on first start and kept in the data directory (it moves with it). */
function installationId(dataDir: string): string {
  const file = join(dataDir, 'installation.id');
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    const id = randomBytes(4).toString('hex');
    writeFileSync(file, id + '\n', { mode: 0o600 });
    return id;
  }
}

/** The config file: --config, else $BERTH_CONFIG, else ./berth.yaml when it exists. */
function configPath(opts: ServerOptions): string | undefined {
  if (opts.configFile) return opts.configFile;
  if (process.env.BERTH_CONFIG) return process.env.BERTH_CONFIG;
  return existsSync('berth.yaml') ? 'berth.yaml' : undefined;
}

async function openStore(config: Config): Promise<Store> {
  if (config.database !== 'sqlite') {
    throw new ConfigError('database', 'PostgreSQL is not supported by this version yet; use "sqlite"');
  }
  return openSqliteStore(join(config.dataDir, 'berth.db'));
}

export async function startServer(opts: ServerOptions = {}): Promise<RunningServer> {
  const print = opts.print ?? ((line: string) => process.stdout.write(line + '\n'));
  const file = configPath(opts);
  const raw: RawConfig = file ? loadConfigFile(file) : {};
  const config = resolveConfig(raw, { listen: opts.listen, dataDir: opts.dataDir }, file);
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const store = await openStore(config);
  const metrics = new Metrics();
  const changes = new ChangeFeed((err) => app?.log.error({ err }, 'change feed: a subscriber failed'));
  const ctx: ServiceContext = {
    store,
    now: Date.now,
    tokenCache: new TokenCache(),
    groupCommit: new GroupCommit(store),
    metrics,
    changes,
  };
  let app: FastifyInstance | undefined;
  let controller: Controller | undefined;
  let url = '';
  try {
    const first = await bootstrap(ctx, dataDir);
    app = await buildApi(ctx, { version: VERSION, logger: { level: config.logLevel } });
    const log = app.log;
    const logs = new LogStore(join(dataDir, 'logs'));
    // Factories are made before the controller that listens to them: reach it when called.
    const theController = () => {
      if (!controller) throw new Error('the controller has not started');
      return controller;
    };
    const factories = createFactories(
      config,
      dataDir,
      {
        handleChanged: (id, handle) => controller?.handleChanged(id, handle),
        workerLost: (id, message) => controller?.workerLost(id, message),
      },
      {
        agentStart: (jobId) => theController().agentStart(jobId),
        agentHeartbeat: (jobId, waitMs) => theController().agentHeartbeat(jobId, waitMs),
        agentFinish: (jobId, result) => theController().agentFinish(jobId, result),
      },
    );
    const wells = createWells(config.resources, {
      baseDir: file ? dirname(resolve(file)) : process.cwd(),
      tokens: new ProjectTokenMinter(ctx, () => url),
      configFile: file,
      postgresPrefix: `berth_${installationId(dataDir)}_r`,
    });
    controller = new Controller({
      store,
      scheduler: new Scheduler(),
      factories,
      wells,
      targets: config.targets,
      logs,
      serverUrl: () => url,
      now: Date.now,
      graceSeconds: config.graceSeconds,
      heartbeatSeconds: config.heartbeatSeconds,
      onError: (err, what) => log.error({ err }, `controller: ${what}`),
      groupCommit: ctx.groupCommit,
      metrics,
      onJobChanged: (id, project, state, reason) =>
        changes.publish({ kind: 'job', id, project, state, reason }),
    });
    const live = controller;
    metrics.observe({
      queues: () => live.queueFiguresAll(),
      factories: () => live.factoryFigures(),
    });
    ctx.runtime = {
      targets: config.targets,
      defaultTarget: config.defaultTarget,
      resourceTypes: config.resources,
      controller: live,
      logs,
    };
    ctx.queueStatus = (name) => {
      const f = live.queueFigures(name);
      return f ?? { usage: {}, borrowed: {}, pending: 0, admitted: 0, running: 0 };
    };
    ctx.listener = {
      queueChanged: (name, queue) => {
        live.queueChanged(name, queue);
        changes.publish({ kind: 'queue', name });
      },
      projectChanged: (name) => changes.publish({ kind: 'project', name }),
      projectWeightChanged: (name, weight) => live.setProjectWeight(name, weight),
    };
    await loadProjectWeights(ctx);
    const { host, port } = parseListen(config.listen);
    await app.listen({ host, port });
    const address = app.server.address();
    const actualPort = typeof address === 'object' && address ? address.port : port;
    url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`;
    await controller.start();
    announceServer({ url, pid: process.pid, dataDir });
    print(`berth ${VERSION} listening on ${url}`);
    print(`data directory: ${dataDir}`);
    print(`dashboard: ${url}/ (sign in with a token)`);
    if (first) {
      print(`first start: created admin user, cluster queue "default" and project "default"`);
      print(`admin token (shown once; also in ${first.tokenFile}, mode 0600):`);
      print(`  ${first.adminToken}`);
    }
    const running = app;
    const runningController = controller;
    let closing: Promise<void> | undefined;
    return {
      url,
      config,
      controller: runningController,
      context: ctx,
      close: () =>
        (closing ??= (async () => {
          withdrawServer(dataDir);
          await runningController.stop();
          await running.close();
          await store.close();
        })()),
    };
  } catch (e) {
    await controller?.stop();
    await app?.close();
    await store.close();
    throw e;
  }
}

/** Runs until SIGINT or SIGTERM, then closes the listener and the store before exiting. */
export async function runServer(opts: ServerOptions = {}): Promise<void> {
  const server = await startServer(opts);
  await new Promise<void>((resolveStop) => {
    const stop = (signal: string) => {
      process.stdout.write(`${signal}: shutting down\n`);
      resolveStop();
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  await server.close();
}
