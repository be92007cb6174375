/** createWells: one well per resource type, and the checks the config schema cannot make. */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ConfigError } from '../../src/domain/errors.js';
import type { ResourceConfig } from '../../src/config/schema.js';
import { createWells, type TokenMinter } from '../../src/wells/index.js';
import { scratchDir } from '../helpers/scratch.js';

let dir: string;
const minter: TokenMinter = {
  mint: async () => ({ token: 't', url: 'http://127.0.0.1:7070' }),
  revoke: async () => {},
};

before(() => {
  dir = scratchDir('berth-create-wells-');
  for (const name of ['mint.sh', 'revoke.sh']) {
    writeFileSync(join(dir, name), `#!/bin/sh\necho '{"from":"${name}"}'\n`, { mode: 0o755 });
  }
  writeFileSync(join(dir, 'plain.sh'), '#!/bin/sh\n', { mode: 0o644 });
  chmodSync(join(dir, 'plain.sh'), 0o644);
  mkdirSync(join(dir, 'folder'));
});

after(() => rmSync(dir, { recursive: true, force: true }));

function refuses(resources: Record<string, ResourceConfig>, key: string, message: RegExp): ConfigError {
  let caught: unknown;
  try {
    createWells(resources, { baseDir: dir, tokens: minter });
  } catch (e) {
    caught = e;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.equal(caught.key, key);
  assert.match(caught.detail, message);
  return caught;
}

void describe('createWells', () => {
  void test('makes one well of the configured kind and capacity per resource type', async () => {
    const wells = createWells(
      {
        licence: { kind: 'semaphore', capacity: 2 },
        'scratch-db': { kind: 'postgres', capacity: 8, url: 'postgres://postgres@127.0.0.1:5432/postgres' },
        'rack-token': { kind: 'exec', capacity: 1, create: './mint.sh', destroy: 'revoke.sh' },
        'api-token': { kind: 'token', capacity: 3, privilege: 'resource.api' },
      },
      { baseDir: dir, tokens: minter },
    );
    try {
      assert.deepEqual(
        [...wells].map(([name, w]) => [name, w.type, w.kind, w.capacity]),
        [
          ['licence', 'licence', 'semaphore', 2],
          ['scratch-db', 'scratch-db', 'postgres', 8],
          ['rack-token', 'rack-token', 'exec', 1],
          ['api-token', 'api-token', 'token', 3],
        ],
      );
      // Relative programs resolve against baseDir, not the process's working directory.
      assert.notEqual(process.cwd(), dir);
      const req = { instanceId: 1, jobId: 1, project: 'p', type: 'rack-token' };
      assert.deepEqual(await wells.get('rack-token')?.create(req), { from: 'mint.sh' });
    } finally {
      await Promise.all([...wells.values()].map((w) => w.close()));
    }
  });

  void test('no resources, no wells', () => {
    assert.equal(createWells({}, { baseDir: dir, tokens: minter }).size, 0);
  });

  void test('exec programs must exist, be files and be executable', () => {
    const exec = (create: string, destroy = './revoke.sh'): Record<string, ResourceConfig> => ({
      'rack-token': { kind: 'exec', capacity: 1, create, destroy },
    });
    refuses(
      exec('./nope.sh'),
      'resources.rack-token.create',
      new RegExp(`^${dir}/nope\\.sh does not exist$`),
    );
    refuses(exec('./mint.sh', './plain.sh'), 'resources.rack-token.destroy', /plain\.sh is not executable/);
    refuses(exec('./folder'), 'resources.rack-token.create', /folder is not a file/);
    refuses(
      { 'rack-token': { kind: 'exec', capacity: 1, create: './mint.sh' } },
      'resources.rack-token.destroy',
      /needs a destroy program/,
    );
  });

  void test('a postgres url must be a postgres:// URL with a host, and is never echoed', () => {
    const pgWith = (url: string): Record<string, ResourceConfig> => ({
      db: { kind: 'postgres', capacity: 1, url },
    });
    refuses(pgWith('host=localhost user=postgres'), 'resources.db.url', /is not a URL/);
    const e = refuses(
      pgWith('mysql://root:hunter22@db.example/x'),
      'resources.db.url',
      /must start with postgres:\/\//,
    );
    assert.ok(!e.message.includes('hunter22'));
    refuses(pgWith('postgres:///postgres?host=/run/postgresql'), 'resources.db.url', /must name a host/);
    refuses({ db: { kind: 'postgres', capacity: 1 } }, 'resources.db.url', /needs url/);
  });

  void test('a key of another kind is refused rather than ignored', () => {
    refuses(
      { licence: { kind: 'semaphore', capacity: 1, url: 'postgres://h/db' } },
      'resources.licence.url',
      /^only postgres wells take url; this one is semaphore$/,
    );
    refuses(
      { db: { kind: 'postgres', capacity: 1, url: 'postgres://h/db', create: './mint.sh' } },
      'resources.db.create',
      /only exec wells take create; this one is postgres/,
    );
    refuses(
      { t: { kind: 'token', capacity: 1, destroy: './revoke.sh' } },
      'resources.t.destroy',
      /only exec wells take destroy/,
    );
  });

  void test('capacity must be a whole number of at least 1', () => {
    refuses({ licence: { kind: 'semaphore', capacity: 0 } }, 'resources.licence.capacity', /at least 1/);
    refuses({ licence: { kind: 'semaphore', capacity: 1.5 } }, 'resources.licence.capacity', /whole number/);
  });

  void test('the config file is named when given', () => {
    assert.throws(
      () =>
        createWells(
          { l: { kind: 'semaphore', capacity: 0 } },
          { baseDir: dir, tokens: minter, configFile: '/etc/berth.yaml' },
        ),
      (e) =>
        e instanceof ConfigError &&
        e.message === '/etc/berth.yaml: resources.l.capacity: must be a whole number of at least 1',
    );
  });
});
