/**
 * The batch script of a slurm worker that runs `berth agent`: the agent command with the server's
 * URL and the worker's id (its one-time credential travels in the job's environment, never on a
 * command line); for a gang, one allocation of N nodes and an agent on each through srun, which
 * tells each its rank (SLURM_PROCID). Slurm gives all the nodes at once, or none.
 */
import { shellQuote } from './direct-run.js';

export interface AgentScriptOptions {
  /** The command that starts `berth agent` on a node; `agent`, `--server` and `--worker` follow. */
  agentCommand: string[];
  /** Where the agent makes its jobs' working directories on the node. */
  workRoot?: string;
  /** A PEM file the agent trusts for the server's certificate, at this path on the nodes. */
  ca?: string;
  /** Where the node's agents keep the images they pull, and the most it may hold, in bytes. */
  imageCache?: string;
  imageCacheBytes?: number;
}

/**
 * `uids`: one per member (by rank), that member's jobs run as (the agent, root on its node, drops
 * to it: docs/SECURITY.md); none: as the Slurm job's user.
 */
export function agentScript(
  o: AgentScriptOptions,
  url: string,
  workerId: number,
  members: number,
  uids?: number[],
): string {
  const agent = [
    ...o.agentCommand,
    'agent',
    '--server',
    url,
    '--worker',
    String(workerId),
    ...(o.workRoot ? ['--work-root', o.workRoot] : []),
    ...(uids?.length ? ['--run-as', uids.join(',')] : []),
    ...(o.ca ? ['--ca', o.ca] : []),
    ...(o.imageCache ? ['--image-cache', o.imageCache] : []),
    ...(o.imageCacheBytes !== undefined ? ['--image-cache-size', String(o.imageCacheBytes)] : []),
  ];
  const run = members > 1 ? ['srun', '--kill-on-bad-exit=0', ...agent] : agent;
  return `#!/bin/sh\nexec ${run.map(shellQuote).join(' ')}\n`;
}
