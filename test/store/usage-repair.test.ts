/**
 * The usage rollups an affected berth wrote (issue #40: a resource named `hasOwnProperty`, its
 * daily amount stored as text) on a SQLite database at the schema before the repair: `berth store
 * check` names the rows, and today's berth, opening the database, removes them (migration
 * 0021_usage_repair) and keeps every other row as it was.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect } from 'kysely';
import { runStoreCheck } from '../../src/server/store-backup.js';
import { usageRepair } from '../../src/store/migrations/0021_usage_repair.js';
import { migrate, MIGRATIONS } from '../../src/store/migrations/index.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { scratchDir } from '../helpers/scratch.js';
import { rmSync } from 'node:fs';

const HOUR = Date.parse('2026-11-30T10:00:00Z');
const DAY = Date.parse('2026-11-30T00:00:00Z');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A data directory whose database an affected berth migrated and wrote the rollups of. */
async function affected(): Promise<string> {
  const dataDir = scratchDir('berth-usage-repair-');
  dirs.push(dataDir);
  const file = join(dataDir, 'berth.db');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database: new BetterSqlite3(file) }) });
  await migrate(
    db,
    'sqlite',
    MIGRATIONS.slice(
      0,
      MIGRATIONS.findIndex(([, m]) => m === usageRepair),
    ),
  );
  await db.destroy();
  const raw = new BetterSqlite3(file);
  const row = raw.prepare(
    'INSERT INTO usage_daily_resources (hour, project, user_name, queue, resource, amount_seconds) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const hourly = raw.prepare(
    'INSERT INTO usage_hourly_resources (hour, project, user_name, queue, resource, amount_seconds) VALUES (?, ?, ?, ?, ?, ?)',
  );
  // What the affected berth wrote for a job that asked for hasOwnProperty: 1, beside a cpu row.
  row.run(
    DAY,
    'ml',
    'alice',
    'default',
    'hasOwnProperty',
    'function hasOwnProperty() { [native code] }0.069',
  );
  row.run(DAY, 'ml', 'alice', 'default', 'cpu', 3.5);
  hourly.run(HOUR, 'ml', 'alice', 'default', 'hasOwnProperty', 0.069);
  hourly.run(HOUR, 'ml', 'alice', 'default', 'cpu', 3.5);
  raw.close();
  return dataDir;
}

describe('usage rollups an affected berth wrote', () => {
  it('are named by berth store check, and removed when berth opens the database; the rest stay', async () => {
    const dataDir = await affected();
    const lines: string[] = [];
    const before = await runStoreCheck({ dataDir, print: (l) => lines.push(l) });
    assert.equal(before.ok, false);
    assert.equal(before.brokenUsage.count, 2);
    const text = lines.join('\n');
    assert.match(text, /usage rows no report can sum: 2 \(berth server removes them/);
    assert.match(
      text,
      /usage_daily_resources 2026-11-30T00:00:00.000Z ml\/alice\/default hasOwnProperty = "function hasOwnProperty\(\) \{ \[native code\] \}0.069"/,
    );
    assert.match(
      text,
      /usage_hourly_resources 2026-11-30T10:00:00.000Z ml\/alice\/default hasOwnProperty = 0.069/,
    );

    const store = await openSqliteStore(join(dataDir, 'berth.db'));
    await store.close();
    const after = await runStoreCheck({ dataDir, print: () => {} });
    assert.equal(after.brokenUsage.count, 0);
    assert.equal(after.ok, true);
    const raw = new BetterSqlite3(join(dataDir, 'berth.db'), { readonly: true });
    try {
      for (const table of ['usage_daily_resources', 'usage_hourly_resources'])
        assert.deepEqual(raw.prepare(`SELECT resource, amount_seconds AS amount FROM ${table}`).all(), [
          { resource: 'cpu', amount: 3.5 },
        ]);
    } finally {
      raw.close();
    }
  });
});
