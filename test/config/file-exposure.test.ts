/**
 * The config file's mode against what it holds (config/file-exposure.ts): a password every user
 * (every job) may read, or a file every user may write, stops the server; a password its group
 * may read is a warning; a file without one may be read by anyone. Then the server itself: it
 * refuses such a file at start, naming it, its mode and the fix, and warns of a data directory
 * others could read before it closed it.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileExposure, hasPassword, passwordKeys } from '../../src/config/file-exposure.js';
import { ConfigError } from '../../src/domain/errors.js';
import { startServer } from '../../src/server/run.js';
import { scratchDir } from '../helpers/scratch.js';

const file = (mode: number) => ({ mode: 0o100000 | mode, isFile: () => true });

describe("the config file's mode", () => {
  it('finds the passwords a config holds: the database URL and wells’ URLs', () => {
    assert.equal(hasPassword('postgres://berth:s3cret@db/berth'), true);
    assert.equal(hasPassword('postgres://berth@db/berth'), false);
    assert.equal(hasPassword('sqlite'), false);
    assert.deepEqual(
      passwordKeys({
        database: 'postgres://berth:x@db/berth',
        resources: {
          scratch: { kind: 'postgres', capacity: 2, url: 'postgres://admin:y@db/postgres' },
          other: { kind: 'postgres', capacity: 2, url: 'postgres://admin@db/postgres' },
          lic: { kind: 'semaphore', capacity: 1 },
        },
      }),
      ['database', 'resources.scratch.url'],
    );
  });

  it('refuses a password others can read, or a file others can write; warns of one its group can read', () => {
    const F = '/etc/berth.yaml';
    for (const [mode, secrets, refused, warned] of [
      [0o600, ['database'], undefined, 0],
      [0o640, ['database'], undefined, 1],
      [
        0o644,
        ['database'],
        /\/etc\/berth\.yaml \(mode 0644\) holds a password \(database\) that every user can read, every job included: chmod 600 \/etc\/berth\.yaml/,
        0,
      ],
      [0o604, ['resources.db.url'], /holds a password \(resources\.db\.url\)/, 0],
      [0o644, [], undefined, 0],
      [
        0o666,
        [],
        /\(mode 0666\) is writable by every user, whose jobs could rewrite what this server runs: chmod o-w/,
        0,
      ],
      [0o620, [], undefined, 0],
    ] as const) {
      const e = fileExposure(F, file(mode), [...secrets]);
      const label = `${mode.toString(8)} ${secrets.join(',')}`;
      if (refused) assert.match(e.refusal ?? '', refused, label);
      else assert.equal(e.refusal, undefined, label);
      assert.equal(e.warnings.length, warned, label);
    }
    // /dev/null, the empty config, is a device every user may write: it holds nothing.
    assert.deepEqual(fileExposure('/dev/null', { mode: 0o20666, isFile: () => false }, []), { warnings: [] });
  });
});

describe('the server at start', () => {
  const dir = scratchDir('berth-exposure-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a config file with a password every user can read, before it opens anything', async () => {
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, 'database: postgres://berth:s3cret@127.0.0.1:1/berth\n');
    chmodSync(config, 0o644);
    await assert.rejects(
      startServer({
        configFile: config,
        dataDir: join(dir, 'never'),
        listen: '127.0.0.1:0',
        print: () => {},
      }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError, String(e));
        assert.match(
          e.message,
          /berth\.yaml \(mode 0644\) holds a password \(database\) that every user can read/,
        );
        return true;
      },
    );
  });

  it('starts with the file made private, and warns of a data directory others could read', async () => {
    const config = join(dir, 'private.yaml');
    writeFileSync(config, 'database: sqlite\n');
    chmodSync(config, 0o644); // no password: anyone may read it
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    chmodSync(data, 0o755);
    writeFileSync(join(data, 'notes.txt'), 'x', { mode: 0o644 });
    const lines: string[] = [];
    const s = await startServer({
      configFile: config,
      dataDir: data,
      listen: '127.0.0.1:0',
      print: (l) => lines.push(l),
    });
    await s.close();
    assert.ok(
      lines.includes(`warning: data directory ${data} was readable by other users (mode 0755): made 0700`),
      lines.join('\n'),
    );
    assert.ok(
      lines.some((l) => l.startsWith(`warning: 1 entry of ${data} was readable by other users (notes.txt)`)),
      lines.join('\n'),
    );
  });
});
