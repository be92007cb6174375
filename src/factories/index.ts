/** Builds the configured factories. */
import { fileURLToPath } from 'node:url';
import type { WorkerImages } from './worker-images.js';
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
  /** This machine's images, for its local factories' workers (worker-images.ts). */
  images?: WorkerImages;
}

/** How a Slurm node starts this berth's CLI: the same Node, flags (tsx under tests) and entry. */
function thisBerth(): string[] {
  const ts = import.meta.url.endsWith('.ts');
  const main = fileURLToPath(new URL(`../cli/main${ts ? '.ts' : '.js'}`, import.meta.url));
  return [process.execPath, ...process.execArgv, main];
}

export function createFactories(
  config: Config,
  { dataDir, installationId, isolation, devices, images }: FactorySetting,
  listener: FactoryListener,
  agent: AgentPort,
): Map<string, Factory> {
  const factories = new Map<string, Factory>();
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
            ...(f.imageCache !== undefined ? { imageCache: f.imageCache } : {}),
            ...(f.imageCacheBytes !== undefined ? { imageCacheBytes: f.imageCacheBytes } : {}),
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
