/** Opens the configured store: SQLite in the data directory, or PostgreSQL at a URL. */
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import { ConfigError } from '../domain/errors.js';
import { MIGRATIONS, NewerStoreError } from '../store/migrations/index.js';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/store.js';

/**
 * For tests only: a server that knows only the first N migrations, as an older berth would
 * (test/replicas/rolling-upgrade.test.ts plays a rolling upgrade with it).
 */
function knownMigrations(): typeof MIGRATIONS {
  const n = Number(process.env.BERTH_TEST_MIGRATIONS);
  return Number.isInteger(n) && n > 0 ? MIGRATIONS.slice(0, n) : MIGRATIONS;
}

export async function openStore(
  config: Config,
  dataDir: string,
  print: (line: string) => void = () => {},
): Promise<Store> {
  if (config.database === 'sqlite') return openSqliteStore(join(dataDir, 'berth.db'));
  try {
    return await openPostgresStore(config.database, {
      // Shorter than the lease, so that a frozen leader's open transaction cannot hold up an election.
      idleInTransactionMs: config.renewSeconds * 1000,
      migrations: knownMigrations(),
      onWaiting: print,
    });
  } catch (e) {
    // Not a setting's fault: the line says what to do.
    if (e instanceof NewerStoreError) throw e;
    throw new ConfigError('database', `cannot use ${redactUrl(config.database)}: ${describeError(e)}`);
  }
}

/** A postgres:// URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the database URL';
  }
}

function describeError(e: unknown): string {
  if (e instanceof AggregateError) return [...new Set(e.errors.map(describeError))].join('; ');
  const code = (e as { code?: unknown }).code;
  const message = e instanceof Error ? e.message : String(e);
  return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
}
