/** Entry point of the `berth` command: one line on stderr and a non-zero exit for any failure. */
import type { Command } from 'commander';
import { baseProgram } from './base-program.js';
import { describeFailure, oneLine } from './errors.js';

/**
 * `berth agent` starts once per Slurm job (or pilot): it loads its own command only, not the
 * rest of the CLI, which would cost every worker about 0.05 s of CPU more.
 */
async function program(): Promise<Command> {
  if (process.argv[2] === 'agent') {
    const { registerAgentCommand } = await import('./commands/agent.js');
    const root = baseProgram();
    registerAgentCommand(root);
    return root;
  }
  return (await import('./program.js')).buildProgram();
}

try {
  await (await program()).parseAsync(process.argv);
} catch (err) {
  const failure = describeFailure(err);
  if (!failure.printed) process.stderr.write(`berth: ${oneLine(failure.message)}\n`);
  if (process.env.BERTH_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
  // Exit now: a half-started server or an open stream must not keep the process alive.
  process.exit(failure.exitCode);
}
