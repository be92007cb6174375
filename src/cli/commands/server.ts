/** `berth server`: run the API, scheduler and dashboard in this process. */
import type { Command } from 'commander';
import { nonNegativeInteger } from '../flags.js';

interface ServerFlags {
  config?: string;
  dataDir?: string;
  listen?: string;
  database?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecureHttp?: true;
  rateLimit?: number;
  jobRateLimit?: number;
}

export function registerServerCommand(program: Command): void {
  program
    .command('server')
    .description('run the berth server (API, scheduler, dashboard)')
    .option('--config <file>', 'berth.yaml to read (default: $BERTH_CONFIG, else ./berth.yaml if present)')
    .option('--data-dir <dir>', 'where the database, logs and admin.token live (default ./.berth)')
    .option('--listen <host:port>', 'address to listen on; port 0 picks a free port (default 127.0.0.1:7070)')
    .option(
      '--database <url>',
      'sqlite (the default: DATA/berth.db) or postgres://USER@HOST:PORT/DB; $BERTH_DATABASE keeps a password off the command line',
    )
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM, with its chain); with --tls-key')
    .option('--tls-key <file>', "the certificate's private key (PEM, unencrypted)")
    .option(
      '--insecure-http',
      'allow plain HTTP on a non-loopback address (tokens cross the network unencrypted)',
    )
    .option(
      '--rate-limit <n>',
      "API requests per second one token may make, then 429 (default: the config's rateLimit, else 1000; 0: no limit)",
      nonNegativeInteger,
    )
    .option(
      '--job-rate-limit <n>',
      "API requests per second one job's token may make, then 429 (default: the config's rateLimit.jobRequestsPerSecond, else 100; 0: no limit)",
      nonNegativeInteger,
    )
    .action(async (o: ServerFlags) => {
      // Loaded here so that client commands do not pay for the server's modules.
      const { runServer } = await import('../../server/run.js');
      const database = o.database ?? process.env.BERTH_DATABASE;
      await runServer({
        configFile: o.config,
        dataDir: o.dataDir,
        listen: o.listen,
        database,
        tlsCert: o.tlsCert,
        tlsKey: o.tlsKey,
        insecureHttp: o.insecureHttp,
        requestsPerSecond: o.rateLimit,
        jobRequestsPerSecond: o.jobRateLimit,
      });
    });
}
