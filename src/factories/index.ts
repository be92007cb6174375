/** Builds the configured factories. */
import type { Config } from '../server/config.js';
import type { Factory, FactoryListener } from './factory.js';
import { LocalFactory } from './local.js';

export function createFactories(
  config: Config,
  dataDir: string,
  listener: FactoryListener,
): Map<string, Factory> {
  const factories = new Map<string, Factory>();
  for (const [name, f] of Object.entries(config.factories)) {
    switch (f.kind) {
      case 'local':
        factories.set(name, new LocalFactory({ name, capacity: f.capacity, dataDir, listener }));
        break;
    }
  }
  return factories;
}
