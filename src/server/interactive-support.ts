/** Which targets may run interactive jobs (`berth run -it`) on this server, judged once at its start. */
import type { Config } from '../config/schema.js';
import type { FactoryIsolation } from '../factories/isolation.js';

/**
 * Per target whose jobs cannot have a terminal, why: a terminal is held by the local factory's
 * agent host, and becomes the job's controlling one inside its namespaces (agent/sandbox.ts);
 * a Slurm node's agent has no channel from the server to take a terminal's bytes yet.
 */
export function interactiveRefused(
  config: Config,
  isolation: Map<string, FactoryIsolation>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, t] of Object.entries(config.targets)) {
    const f = config.factories[t.factory];
    if (!f) continue;
    if (f.kind !== 'local')
      out[name] =
        `its factory "${t.factory}" is a ${f.kind} factory: interactive jobs run on local factories for now`;
    else if (!isolation.get(t.factory)?.sandbox)
      out[name] =
        `its factory "${t.factory}" runs jobs without namespaces of their own (namespaces: off, or bubblewrap missing), which a job's terminal needs`;
  }
  return out;
}
