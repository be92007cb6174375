/** The root `berth` command's settings, shared by the whole CLI and by `berth agent` alone. */
import { Command } from 'commander';
import { VERSION } from '../version.js';
import { oneLine } from './errors.js';

export function baseProgram(): Command {
  // Settings first: subcommands created with .command() inherit them.
  return (
    new Command('berth')
      .version(VERSION)
      .description('berth: a multi-tenant batch job scheduler')
      .exitOverride()
      // Options before a subcommand are berth's, after it the subcommand's: `berth submit` passes
      // everything after its command on verbatim (`berth submit sh -c 'x' -v`).
      .enablePositionalOptions()
      .configureOutput({
        outputError: (message, write) => write(`berth: ${oneLine(message.replace(/^error: /, ''))}\n`),
      })
  );
}
