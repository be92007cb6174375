/** `berth server`: run the API, scheduler and dashboard in this process. */
import type { Command } from 'commander';

export function registerServerCommand(program: Command): void {
  program
    .command('server')
    .description('run the berth server (API, scheduler, dashboard)')
    .option('--config <file>', 'berth.yaml to read (default: $BERTH_CONFIG, else ./berth.yaml if present)')
    .option('--data-dir <dir>', 'where the database, logs and admin.token live (default ./.berth)')
    .option('--listen <host:port>', 'address to listen on; port 0 picks a free port (default 127.0.0.1:7070)')
    .action(async (o: { config?: string; dataDir?: string; listen?: string }) => {
      // Loaded here so that client commands do not pay for the server's modules.
      const { runServer } = await import('../../server/run.js');
      await runServer({ configFile: o.config, dataDir: o.dataDir, listen: o.listen });
    });
}
