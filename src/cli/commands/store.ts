/** `berth store copy`: move an installation from SQLite to PostgreSQL. */
import type { Command } from 'commander';
import { json } from '../output.js';

export function registerStoreCommands(program: Command): void {
  const store = program.command('store').description("manage the server's store (its database)");
  store
    .command('copy')
    .description(
      'copy an installation from its SQLite file to an empty PostgreSQL database: users, tokens, projects, queues, jobs, events, logs and resource records',
    )
    .requiredOption('--to <url>', 'the target: postgres://USER[:PASSWORD]@HOST:PORT/DATABASE (must be empty)')
    .option(
      '--data-dir <dir>',
      "the installation to copy (default: the config file's dataDir, else ./.berth)",
    )
    .option('--config <file>', 'berth.yaml whose dataDir to copy')
    .option('-o, --output <format>', 'json: print what was copied as JSON')
    .addHelpText(
      'after',
      `
Stop the server first; the copy runs in one transaction, so the target gets all of it or
nothing. Then start the server on the target: berth server --database postgres://…

Example:
  berth store copy --data-dir ./.berth --to postgres://berth@db.example.com/berth`,
    )
    .action(async (o: { to: string; dataDir?: string; config?: string; output?: string }) => {
      const { runStoreCopy } = await import('../../server/store-copy.js');
      const quiet = o.output === 'json';
      const report = await runStoreCopy({
        to: o.to,
        dataDir: o.dataDir,
        configFile: o.config,
        print: (line) => {
          if (!quiet) process.stdout.write(line + '\n');
        },
      });
      if (quiet) process.stdout.write(json(report) + '\n');
    });
}
