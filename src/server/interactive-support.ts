/** Which targets may run interactive jobs (`berth run -it`) on this server, judged once at its start. */
import type { Config } from '../config/schema.js';
import type { FactoryIsolation } from '../factories/isolation.js';

/**
 * Per target whose jobs cannot have a terminal, why: a terminal is held by the job's agent — the
 * local factory's agent host, or `berth agent` on a Slurm node, whose channel to the server carries
 * its bytes (agent/agent-channel.ts) — and becomes the job's controlling one inside its namespaces
 * (agent/sandbox.ts). A Slurm factory's direct workers (`sharedDir`) have no agent. Whether a
 * node's agent can give namespaces is known on the node only: one that cannot fails the job at
 * its start, saying so.
 */
export function interactiveRefused(
  config: Config,
  isolation: Map<string, FactoryIsolation>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, t] of Object.entries(config.targets)) {
    const f = config.factories[t.factory];
    if (!f) continue;
    if (f.kind === 'slurm') {
      if (f.sharedDir !== undefined)
        out[name] =
          `its factory "${t.factory}" runs its jobs directly on the nodes (sharedDir), with no berth agent to hold a terminal`;
    } else if (f.kind !== 'local')
      out[name] =
        `its factory "${t.factory}" is a ${f.kind} factory: interactive jobs run on local and slurm factories`;
    else if (!isolation.get(t.factory)?.sandbox)
      out[name] =
        `its factory "${t.factory}" runs jobs without namespaces of their own (namespaces: off, or bubblewrap missing), which a job's terminal needs`;
  }
  return out;
}
