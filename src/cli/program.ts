/** The `berth` command tree. Errors from commander are printed as one line: `berth: MESSAGE`. */
import { Command } from 'commander';
import { VERSION } from '../version.js';
import { registerAgentCommand } from './commands/agent.js';
import { registerContextCommands } from './commands/context.js';
import { registerJobCommands } from './commands/jobs.js';
import { registerLoginCommands } from './commands/login.js';
import { registerPriorityCommands } from './commands/priority.js';
import { registerProjectCommands } from './commands/project.js';
import { registerQueueCommands } from './commands/queue.js';
import { registerResourceCommands } from './commands/resources.js';
import { registerServerCommand } from './commands/server.js';
import { registerSimulateCommand } from './commands/simulate.js';
import { registerStoreCommands } from './commands/store.js';
import { registerUserCommands } from './commands/user.js';
import { oneLine } from './errors.js';

export function buildProgram(): Command {
  // Settings first: subcommands created with .command() inherit them.
  const program = new Command('berth')
    .version(VERSION)
    .description('berth: a multi-tenant batch job scheduler')
    .exitOverride()
    // Options before a subcommand are berth's, after it the subcommand's: `berth submit` passes
    // everything after its command on verbatim (`berth submit sh -c 'x' -v`).
    .enablePositionalOptions()
    .configureOutput({
      outputError: (message, write) => write(`berth: ${oneLine(message.replace(/^error: /, ''))}\n`),
    })
    .addHelpText(
      'after',
      `
Client commands find their server in BERTH_URL/BERTH_TOKEN, else the current context
(berth login), else a local server ($BERTH_DATA_DIR, ./.berth, or the last one started).
The current project is --project, else BERTH_PROJECT, else the context's, else "default".`,
    );
  registerServerCommand(program);
  registerLoginCommands(program);
  registerContextCommands(program);
  registerProjectCommands(program);
  registerQueueCommands(program);
  registerPriorityCommands(program);
  registerUserCommands(program);
  registerJobCommands(program);
  registerResourceCommands(program);
  registerSimulateCommand(program);
  registerStoreCommands(program);
  registerAgentCommand(program);
  return program;
}
