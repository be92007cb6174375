/** Builds the configured factories. */
import type { Config } from '../config/schema.js';
import type { AgentPort, Factory, FactoryListener } from './factory.js';
import { LocalFactory } from './local.js';
import { SimulatedFactory } from './simulated.js';

export function createFactories(
  config: Config,
  dataDir: string,
  listener: FactoryListener,
  agent: AgentPort,
): Map<string, Factory> {
  const factories = new Map<string, Factory>();
  for (const [name, f] of Object.entries(config.factories)) {
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
          }),
        );
        break;
      case 'simulated':
        factories.set(name, new SimulatedFactory({ name, capacity: f.capacity, listener, agent }));
        break;
    }
  }
  return factories;
}
