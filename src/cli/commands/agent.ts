/** `berth agent`: run one worker's agent on this machine (started by a factory, e.g. slurm's). */
import type { Command } from 'commander';
import { CliError } from '../errors.js';
import { hostname } from 'node:os';
import { integer, nonNegativeInteger } from '../flags.js';
import { readTrustFile } from '../trust-file.js';

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      "run one worker's agent here: register with the server, run the job and report how it ended — on a pilot worker, each job the server hands it (factories start it; the one-time credential comes in $BERTH_AGENT_CREDENTIAL)",
    )
    .requiredOption('--server <url>', "the server's URL as this machine reaches it")
    .requiredOption('--worker <id>', 'the worker this agent runs', integer)
    .option(
      '--work-root <dir>',
      "where the job's working directory is made (default: the system's temporary directory)",
    )
    .option(
      '--rank <n>',
      'which member of a gang job this agent runs (default: $SLURM_PROCID under srun, else 0)',
      nonNegativeInteger,
    )
    .option(
      '--host <name>',
      "the name the gang's other members reach this machine by, in their BERTH_HOSTS (default: $SLURMD_NODENAME under Slurm, else this machine's host name)",
    )
    .option(
      '--ca <file>',
      "PEM certificates to trust for the server's (a private CA, or the server's own certificate), besides Node's built-in CAs (default: $BERTH_CA)",
    )
    .action(
      async (o: {
        server: string;
        worker: number;
        workRoot?: string;
        rank?: number;
        host?: string;
        ca?: string;
      }) => {
        const credential = process.env.BERTH_AGENT_CREDENTIAL;
        if (!credential)
          throw new CliError(
            'BERTH_AGENT_CREDENTIAL is not set: the factory that starts the agent passes it',
          );
        delete process.env.BERTH_AGENT_CREDENTIAL; // the job's processes must not see it
        const ca = readTrustFile(o.ca, process.env.BERTH_CA);
        const { runRemoteAgent } = await import('../../agent/remote-agent.js');
        const procId = process.env.SLURM_PROCID;
        const rank = o.rank ?? (procId && /^\d+$/.test(procId) ? Number(procId) : 0);
        const host = o.host ?? (process.env.SLURMD_NODENAME || hostname());
        await runRemoteAgent({
          url: o.server,
          workerId: o.worker,
          credential,
          workRoot: o.workRoot,
          rank,
          host,
          ...(ca ? { ca } : {}),
        });
        // Reported: exit at once. Kept-alive connections and a heartbeat long poll still in flight
        // would hold the process (and so its Slurm job, and its slot) for seconds more.
        process.exit(0);
      },
    );
}
