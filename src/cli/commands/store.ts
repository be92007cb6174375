/**
 * `berth store copy`: move an installation from SQLite to PostgreSQL; `backup`, `restore` and
 * `check` of a SQLite installation (server/store-backup.ts).
 */
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
      await reported(o, (print) =>
        runStoreCopy({ to: o.to, dataDir: o.dataDir, configFile: o.config, print }),
      );
    });
  registerBackupCommands(store);
}

/** The flags that find an installation: its data directory, config file and database. */
function installationFlags(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', "the installation (default: the config file's dataDir, else ./.berth)")
    .option('--config <file>', 'berth.yaml whose dataDir (and database) to use')
    .option('--database <url>', 'sqlite, or postgres://… (default: $BERTH_DATABASE, else the config file)');
}

interface InstallationFlags {
  dataDir?: string;
  config?: string;
  database?: string;
  output?: string;
}

/**
 * Runs `run`, which prints its progress line by line; with `-o json`, nothing but its report, as
 * JSON, at the end. Returns the report.
 */
async function reported<T>(
  o: { output?: string },
  run: (print: (line: string) => void) => Promise<T>,
): Promise<T> {
  const quiet = o.output === 'json';
  const report = await run((line) => {
    if (!quiet) process.stdout.write(line + '\n');
  });
  if (quiet) process.stdout.write(json(report) + '\n');
  return report;
}

function registerBackupCommands(store: Command): void {
  installationFlags(
    store
      .command('backup')
      .description(
        'copy a SQLite installation while its server runs — database, job logs, artifacts — into a new directory FILE',
      )
      .argument('<file>', 'where the backup goes: a directory made there (must not exist yet)'),
  )
    .option('-o, --output <format>', 'json: print what was backed up as JSON')
    .addHelpText(
      'after',
      `
The backup is a directory, not an archive: berth.db (a consistent copy, taken with VACUUM INTO
while the server goes on writing), logs/ (the log of every job in that copy), artifacts/ (when
they live in the data directory), installation.id, admin.token and backup.json. Every job whose
submission was acknowledged before the backup began is in it, with its log. Archive it with tar
if you like; restore it with berth store restore.

On PostgreSQL it says how to use pg_dump instead.

Example:
  berth store backup /backups/berth-$(date +%F) --data-dir /var/lib/berth`,
    )
    .action(async (file: string, o: InstallationFlags) => {
      const { runStoreBackup } = await import('../../server/store-backup.js');
      await reported(o, (print) =>
        runStoreBackup({
          target: file,
          dataDir: o.dataDir,
          configFile: o.config,
          database: o.database,
          print,
        }),
      );
    });

  store
    .command('restore')
    .description('restore a backup of berth store backup into a new or empty data directory')
    .argument('<file>', 'the backup: the directory berth store backup made')
    .requiredOption('--data-dir <dir>', 'the data directory to restore into (new, or empty)')
    .option('-o, --output <format>', 'json: print what was restored as JSON')
    .addHelpText(
      'after',
      `
Refuses a data directory that holds anything. Then start the server on it:
  berth server --data-dir DIR

Example:
  berth store restore /backups/berth-2026-11-28 --data-dir /var/lib/berth`,
    )
    .action(async (file: string, o: { dataDir: string; output?: string }) => {
      const { runStoreRestore } = await import('../../server/store-backup.js');
      await reported(o, (print) => runStoreRestore({ source: file, dataDir: o.dataDir, print }));
    });

  installationFlags(
    store
      .command('check')
      .description(
        "check a SQLite installation: the database's integrity (PRAGMA integrity_check), rows whose job is gone, log files of no job",
      ),
  )
    .option('-o, --output <format>', 'json: print the findings as JSON')
    .addHelpText(
      'after',
      `
Read-only: it may run beside the server. Exits 1 when it finds anything.

Example:
  berth store check --data-dir /var/lib/berth`,
    )
    .action(async (o: InstallationFlags) => {
      const { runStoreCheck } = await import('../../server/store-backup.js');
      const report = await reported(o, (print) =>
        runStoreCheck({ dataDir: o.dataDir, configFile: o.config, database: o.database, print }),
      );
      if (!report.ok) process.exitCode = 1;
    });
}
