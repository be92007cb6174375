/**
 * Builds a controller with its own factories and wells: once for a single server, and once per
 * term on the replica that leads (its factories and wells are closed with it when it steps down).
 */
import { dirname, resolve } from 'node:path';
import type { Config } from '../config/schema.js';
import { Controller, type ControllerOptions } from '../controller/controller.js';
import type { ImageDigests } from '../controller/core.js';
import { createFactories } from '../factories/index.js';
import { machineImages } from '../factories/worker-images.js';
import type { FactoryIsolation } from '../factories/isolation.js';
import type { FactoryDevices } from '../factories/devices.js';
import type { Metrics } from '../metrics/metrics.js';
import { Scheduler } from '../scheduler/index.js';
import type { ServiceContext } from '../service/context.js';
import { ProjectTokenMinter } from '../service/tenancy/project-tokens.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { LogStore } from '../store/log-store.js';
import type { Db } from '../store/store.js';
import { createWells } from '../wells/index.js';
import { withAuthFile } from '../images/auth-file.js';
import { DigestMemo } from '../images/digest-memo.js';
import { registryAuth } from '../service/tenancy/registry-credentials.js';
import { resolveDigest } from '../images/skopeo.js';

export interface ControllerDeps {
  config: Config;
  /** The config file, whose folder relative exec programs resolve against. */
  file: string | undefined;
  dataDir: string;
  /** Who each factory's jobs run as, decided at the server's start (factories/isolation.ts). */
  isolation: Map<string, FactoryIsolation>;
  /** Each local factory's devices, found at the server's start (factories/devices.ts). */
  devices: Map<string, FactoryDevices>;
  /** Names what the postgres wells make: the same on every replica of an installation. */
  installationId: string;
  ctx: ServiceContext;
  logs: LogStore;
  metrics: Metrics;
  url: () => string;
  onError: (err: unknown, what: string) => void;
  onJobChanged: ControllerOptions['onJobChanged'];
}

export function buildController(
  d: ControllerDeps,
  writes: {
    groupCommit: GroupCommit;
    fence?: (tx: Db) => Promise<void>;
    onWriteFailed?: (err: unknown) => void;
  },
): Controller {
  // Factories are made before the controller that listens to them: they reach it when called,
  // which is never before it exists.
  // This machine's images: shared by its local factories, listed and pruned through the controller.
  const images = machineImages(d.config, d.dataDir, d.isolation, {
    pulled: (bytes) => d.metrics.imagePulled(bytes),
    hit: () => d.metrics.imageCacheHit(),
    evicted: () => d.metrics.imageEvicted(),
  });
  const factories = createFactories(
    d.config,
    {
      dataDir: d.dataDir,
      installationId: d.installationId,
      isolation: d.isolation,
      devices: d.devices,
      ...(images ? { images } : {}),
    },
    {
      handleChanged: (id, handle) => controller.handleChanged(id, handle),
      workerLost: (id, message) => controller.workerLost(id, message),
      workerWaiting: (id, reason) => controller.workerWaiting(id, reason),
    },
    {
      agentStart: (jobId, member, waitMs) => controller.agentStart(jobId, member, waitMs),
      agentHeartbeat: (jobId, waitMs, rank) => controller.agentHeartbeat(jobId, waitMs, rank),
      agentFinish: async (jobId, result, rank) => void (await controller.agentFinish(jobId, result, rank)),
      agentLogs: (jobId, data) => controller.agentLogs(jobId, data),
      agentSpec: (jobId) => controller.agentSpec(jobId),
    },
  );
  const wells = createWells(d.config.resources, {
    baseDir: d.file ? dirname(resolve(d.file)) : process.cwd(),
    tokens: new ProjectTokenMinter(d.ctx, d.url),
    configFile: d.file,
    postgresPrefix: `berth_${d.installationId}_r`,
  });
  const controller: Controller = new Controller({
    store: d.ctx.store,
    scheduler: new Scheduler(),
    factories,
    wells,
    targets: d.config.targets,
    resources: d.config.resources,
    logs: d.logs,
    maxLogBytesPerRun: d.config.logs.maxBytesPerJob,
    serverUrl: d.url,
    now: Date.now,
    graceSeconds: d.config.graceSeconds,
    heartbeatSeconds: d.config.heartbeatSeconds,
    interactive: d.config.interactive,
    onError: d.onError,
    groupCommit: writes.groupCommit,
    fence: writes.fence,
    onWriteFailed: writes.onWriteFailed,
    metrics: d.metrics,
    onJobChanged: d.onJobChanged,
    images: registryAnswers(d),
    ...(images ? { machineImages: images } : {}),
  });
  return controller;
}

/**
 * What a tag stands for (asked of its registry with the job's project's login, kept a few seconds:
 * images/digest-memo.ts), and that login for a pull (service/tenancy/registry-credentials.ts).
 */
function registryAnswers(d: ControllerDeps): ImageDigests {
  const login = (project: string, registry: string) =>
    registryAuth(d.ctx.store.db, d.ctx.secrets, project, registry);
  const { insecureRegistries, tagCacheSeconds } = d.config.images;
  const memo = new DigestMemo(
    async (ref, project) =>
      withAuthFile(await login(project, ref.registry), (authFile) =>
        resolveDigest(ref, { insecureRegistries, ...(authFile ? { authFile } : {}) }),
      ),
    tagCacheSeconds * 1000,
  );
  return { resolve: (ref, project) => memo.resolve(ref, project), login };
}
