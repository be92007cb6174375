/** `berth agent`: run one worker's agent on this machine (started by a factory, e.g. slurm's). */
import type { Command } from 'commander';
import { CliError } from '../errors.js';
import { integer } from '../flags.js';

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
    .action(async (o: { server: string; worker: number; workRoot?: string }) => {
      const credential = process.env.BERTH_AGENT_CREDENTIAL;
      if (!credential)
        throw new CliError('BERTH_AGENT_CREDENTIAL is not set: the factory that starts the agent passes it');
      delete process.env.BERTH_AGENT_CREDENTIAL; // the job's processes must not see it
      const { runRemoteAgent } = await import('../../agent/remote-agent.js');
      await runRemoteAgent({ url: o.server, workerId: o.worker, credential, workRoot: o.workRoot });
      // Reported: exit at once. Kept-alive connections and a heartbeat long poll still in flight
      // would hold the process (and so its Slurm job, and its slot) for seconds more.
      process.exit(0);
    });
}
