/**
 * Whether a local factory's jobs get namespaces of their own (agent/sandbox.ts), decided once at
 * the server's start from `namespaces` (auto, required, off) and what the machine allows
 * (agent/sandbox-probe.ts). A `required` the machine cannot meet stops the server, naming the key
 * and what to install.
 */
import { probeSandbox } from '../agent/sandbox-probe.js';
import type { FactoryConfig } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import { formatAmount } from '../domain/quantity.js';

export interface FactoryNamespaces {
  /** Present when jobs run in namespaces: the size of their /tmp and /dev/shm, their network. */
  sandbox?: { tmpBytes: number; network: 'host' | 'none' };
  /** For the start line and `berth targets`. */
  summary: string;
}

export function factoryNamespaces(name: string, f: FactoryConfig, file?: string): FactoryNamespaces {
  const network = f.network ?? 'host';
  if (f.namespaces === 'off') {
    if (network === 'none')
      throw new ConfigError(`factories.${name}.network`, '`none` needs namespaces (namespaces: off)', file);
    return {
      summary:
        'no namespaces per job (namespaces: off): jobs share /tmp, /dev/shm, /dev and the process table',
    };
  }
  const support = probeSandbox();
  if (!support.available) {
    const key = f.namespaces === 'required' ? 'namespaces' : network === 'none' ? 'network' : undefined;
    if (key)
      throw new ConfigError(
        `factories.${name}.${key}`,
        `${key === 'network' ? '`none` needs namespaces, but' : 'required, but'} jobs cannot get namespaces of their own here: ${support.why}`,
        file,
      );
    return { summary: `no namespaces per job: ${support.why}` };
  }
  const tmpBytes = f.tmpBytes!;
  return {
    sandbox: { tmpBytes, network },
    summary:
      `each job in namespaces of its own (pid, mount, ipc${network === 'none' ? ', network: none' : ''}): ` +
      `its own /tmp and /dev/shm (${formatAmount('memory', tmpBytes)} each), /dev and process view`,
  };
}
