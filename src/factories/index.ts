/** Builds the configured factories. */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImageCache, type ImageCacheEvents } from '../images/image-cache.js';
import { WorkerImages } from './worker-images.js';
import type { Config } from '../config/schema.js';
import type { AgentPort, Factory, FactoryListener } from './factory.js';
import type { FactoryIsolation } from './isolation.js';
import type { FactoryDevices } from './devices.js';
import { LocalFactory } from './local.js';
import { SimulatedFactory } from './simulated.js';
import { SlurmFactory } from './slurm/slurm-factory.js';

export interface FactorySetting {
  dataDir: string;
  /** Names what factories make outside this machine (Slurm jobs): the same on every replica. */
  installationId: string;
  /** Who each factory's jobs run as (isolation.ts), by factory name: decided once, at start. */
  isolation: Map<string, FactoryIsolation>;
  /** Each local factory's devices (devices.ts), by factory name. */
  devices: Map<string, FactoryDevices>;
  /** What this machine's image cache tells as it works (the server's metrics). */
  imageEvents?: ImageCacheEvents;
}

/** How a Slurm node starts this berth's CLI: the same Node, flags (tsx under tests) and entry. */
function thisBerth(): string[] {
  const ts = import.meta.url.endsWith('.ts');
  const main = fileURLToPath(new URL(`../cli/main${ts ? '.ts' : '.js'}`, import.meta.url));
  return [process.execPath, ...process.execArgv, main];
}

export function createFactories(
  config: Config,
  { dataDir, installationId, isolation, devices, imageEvents }: FactorySetting,
  listener: FactoryListener,
  agent: AgentPort,
): Map<string, Factory> {
  const factories = new Map<string, Factory>();
  const images = workerImages(config, dataDir, isolation, imageEvents);
  for (const [name, f] of Object.entries(config.factories)) {
    const { uids, users, sandbox } = isolation.get(name) ?? {};
    switch (f.kind) {
      case 'local':
        factories.set(
          name,
          new LocalFactory({
            name,
            capacity: f.capacity,
            dataDir,
            listener,
            cgroups: f.cgroups,
            pidsLimit: f.pidsLimit,
            ca: f.ca,
            ...(uids ? { uids } : {}),
            ...(uids && users?.size ? { users } : {}),
            ...(f.workRoot !== undefined ? { workRoot: f.workRoot } : {}),
            ...(devices.has(name) ? { devices: devices.get(name)!.inventory } : {}),
            ...(sandbox ? { sandbox, ...(images ? { images } : {}) } : {}),
          }),
        );
        break;
      case 'simulated':
        factories.set(name, new SimulatedFactory({ name, capacity: f.capacity, listener, agent }));
        break;
      case 'slurm':
        factories.set(
          name,
          new SlurmFactory({
            name,
            capacity: f.capacity,
            listener,
            installationId,
            partition: f.partition,
            account: f.account,
            qos: f.qos,
            cpusPerTask: f.cpusPerTask,
            timeLimitSeconds: f.timeLimitSeconds ?? 3600,
            sbatchArgs: f.sbatchArgs ?? [],
            slurmConf: f.slurmConf,
            agentCommand: f.agentCommand ?? thisBerth(),
            workRoot: f.workRoot,
            pollSeconds: f.pollSeconds,
            ca: f.ca,
            ...(f.sharedDir !== undefined ? { sharedDir: f.sharedDir, agent } : {}),
            ...(uids ? { uids } : {}),
            ...(users?.size ? { users } : {}),
            ...(f.gres ? { gres: f.gres } : {}),
          }),
        );
        break;
    }
  }
  return factories;
}

/**
 * This machine's images (config `images`: DATA/images by default) and its workers' layers
 * (DATA/image-layers), shared by its local factories; none when no local factory gives its jobs
 * namespaces of their own, which images need.
 */
function workerImages(
  config: Config,
  dataDir: string,
  isolation: Map<string, FactoryIsolation>,
  events: ImageCacheEvents | undefined,
): WorkerImages | undefined {
  const runs = Object.entries(config.factories).some(
    ([name, f]) => f.kind === 'local' && isolation.get(name)?.sandbox !== undefined,
  );
  if (!runs) return undefined;
  const cache = new ImageCache(
    config.images.dir ?? join(dataDir, 'images'),
    { insecureRegistries: config.images.insecureRegistries },
    { cacheBytes: config.images.cacheBytes, ...(events ? { events } : {}) },
  );
  return new WorkerImages(cache, join(dataDir, 'image-layers'));
}
