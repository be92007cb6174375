/** Entry point of the `berth` command. */
import { Command } from 'commander';
import { VERSION } from '../version.js';
import { runServer } from '../server/run.js';
import { ConfigError } from '../domain/errors.js';

const program = new Command('berth')
  .version(VERSION)
  .description('berth: a multi-tenant batch job scheduler');

program
  .command('server')
  .description('run the berth server (API, scheduler, dashboard)')
  .option('--config <file>', 'berth.yaml to read (default: $BERTH_CONFIG, else ./berth.yaml if present)')
  .option('--data-dir <dir>', 'where the database, logs and admin.token live (default ./.berth)')
  .option('--listen <host:port>', 'address to listen on; port 0 picks a free port (default 127.0.0.1:7070)')
  .action(async (o: { config?: string; dataDir?: string; listen?: string }) => {
    await runServer({ configFile: o.config, dataDir: o.dataDir, listen: o.listen });
  });

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof ConfigError) process.stderr.write(`berth: invalid configuration: ${err.message}\n`);
  else process.stderr.write(`berth: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
