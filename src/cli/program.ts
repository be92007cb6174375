/** The `berth` command tree. Errors from commander are printed as one line: `berth: MESSAGE`. */
import type { Command } from 'commander';
import { baseProgram } from './base-program.js';
import { registerAgentCommand } from './commands/agent.js';
import { registerArtifactCommands } from './commands/artifacts.js';
import { registerContextCommands } from './commands/context.js';
import { registerJobCommands } from './commands/jobs.js';
import { registerExecCommand } from './commands/exec.js';
import { registerRunCommands } from './commands/run.js';
import { registerPortForwardCommand } from './commands/port-forward.js';
import { registerLoginCommands } from './commands/login.js';
import { registerPriorityCommands } from './commands/priority.js';
import { registerProjectCommands } from './commands/project.js';
import { registerQueueCommands } from './commands/queue.js';
import { registerResourceCommands } from './commands/resources.js';
import { registerServerCommand } from './commands/server.js';
import { registerTargetCommand } from './commands/targets.js';
import { registerDiagCommand } from './commands/diag.js';
import { registerImagesCommand } from './commands/images.js';
import { registerSimulateCommand } from './commands/simulate.js';
import { registerStoreCommands } from './commands/store.js';
import { registerUserCommands } from './commands/user.js';
import { registerTokenCommands } from './commands/token.js';
import { registerAuditCommand } from './commands/audit.js';
import { registerUsageCommand } from './commands/usage.js';
import { registerCompletionCommands } from './commands/completion.js';

export function buildProgram(): Command {
  const program = baseProgram().addHelpText(
    'after',
    `
Client commands find their server in BERTH_URL/BERTH_TOKEN, else the current context
(berth login), else a local server ($BERTH_DATA_DIR, ./.berth, or the last one started).
The current project is --project, else BERTH_PROJECT, else the context's, else "default".
Over HTTPS the server's certificate is verified against Node's CAs plus BERTH_CA's file, else
the context's (berth login --ca FILE), else a local server's own certificate.`,
  );
  registerServerCommand(program);
  registerLoginCommands(program);
  registerContextCommands(program);
  registerProjectCommands(program);
  registerQueueCommands(program);
  registerPriorityCommands(program);
  registerUserCommands(program);
  registerTokenCommands(program);
  registerAuditCommand(program);
  registerUsageCommand(program);
  registerJobCommands(program);
  registerRunCommands(program);
  registerExecCommand(program);
  registerPortForwardCommand(program);
  registerArtifactCommands(program);
  registerTargetCommand(program);
  registerImagesCommand(program);
  registerDiagCommand(program);
  registerResourceCommands(program);
  registerSimulateCommand(program);
  registerStoreCommands(program);
  registerAgentCommand(program);
  registerCompletionCommands(program);
  return program;
}
