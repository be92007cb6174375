/**
 * Every well kind berth has, held to the Well contract (well-suite.ts), each against the real
 * thing: the PostgreSQL server on 127.0.0.1:5432, shell programs on disk, berth's token store in
 * a real SQLite file. Wells are built the way the server builds them, from a resource config.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import pg from 'pg';
import type { ResourceConfig } from '../../src/config/schema.js';
import { authenticate } from '../../src/service/tenancy/authenticate.js';
import type { ServiceContext } from '../../src/service/context.js';
import { ProjectTokenMinter } from '../../src/service/tenancy/project-tokens.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { createWells, type TokenMinter, type Well } from '../../src/wells/index.js';
import { wellConformance } from './well-suite.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('berth-wells-');
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

const noTokens: TokenMinter = {
  mint: () => Promise.reject(new Error('no tokens here')),
  revoke: () => Promise.resolve(),
};

function well(type: string, config: ResourceConfig, tokens: TokenMinter = noTokens): Well {
  return createWells({ [type]: config }, { baseDir: dir, tokens }).get(type)!;
}

function program(name: string, body: string): string {
  writeFileSync(join(dir, name), `#!/bin/sh\nset -e\n${body}\n`, { mode: 0o755 });
  return name;
}

wellConformance({
  kind: 'semaphore',
  make: (type, capacity) => well(type, { kind: 'semaphore', capacity }),
  fields: [],
});

// exec: one file per live instance, named by its id, so destroy needs no metadata.
const alive = join(dir, 'alive');
mkdirSync(alive);
const instanceFile = (id: number) => join(alive, String(id));
const create = program(
  'create.sh',
  `touch "${alive}/$BERTH_RESOURCE_ID"\necho "{\\"id\\": \\"$BERTH_RESOURCE_ID\\", \\"file\\": \\"${alive}/$BERTH_RESOURCE_ID\\"}"`,
);
const destroy = program('destroy.sh', `rm -f "${alive}/$BERTH_RESOURCE_ID"`);
const refuse = program('refuse.sh', 'echo "the licence server is down" >&2\nexit 1');
wellConformance({
  kind: 'exec',
  make: (type, capacity) => well(type, { kind: 'exec', capacity, create, destroy }),
  failing: (type) => well(type, { kind: 'exec', capacity: 1, create: refuse, destroy }),
  exists: async (req) => existsSync(instanceFile(req.instanceId)),
  use: async (metadata) => assert.ok(existsSync(metadata.file!), 'the file the job is told of exists'),
  fields: ['id', 'file'],
});

// postgres: a database and a role per instance on the real server.
const PG = 'postgres://postgres@127.0.0.1:5432/postgres';
const prefix = `berth_conf${process.pid}_r`;
const admin = new pg.Pool({ connectionString: PG, max: 1 });
wellConformance({
  kind: 'postgres',
  make: (type, capacity) => well(type, { kind: 'postgres', capacity, url: PG, prefix }),
  // Nothing listens on port 1: every connection is refused.
  failing: (type) =>
    well(type, { kind: 'postgres', capacity: 1, url: 'postgres://postgres@127.0.0.1:1/postgres', prefix }),
  exists: async (req) => {
    const name = `${prefix}${req.instanceId}`;
    const r = await admin.query(
      'SELECT (SELECT count(*) FROM pg_database WHERE datname = $1) + (SELECT count(*) FROM pg_roles WHERE rolname = $1) AS n',
      [name],
    );
    return Number((r.rows[0] as { n: string }).n) > 0;
  },
  use: async (metadata) => {
    const client = new pg.Client({ connectionString: metadata.url });
    await client.connect();
    try {
      const r = await client.query(
        'CREATE TABLE t (x int); INSERT INTO t VALUES (41), (1); SELECT sum(x) AS s FROM t',
      );
      const rows = (r as unknown as pg.QueryResult[]).at(-1)!.rows as { s: string }[];
      assert.equal(rows[0]?.s, '42');
    } finally {
      await client.end();
    }
  },
  fields: ['url', 'host', 'port', 'database', 'user', 'password'],
  close: () => admin.end(),
});

// token: berth API tokens for the job's project, in a real store.
const store = await openSqliteStore(join(dir, 'tokens.db'));
const ctx: ServiceContext = { store, now: Date.now };
const minter = new ProjectTokenMinter(ctx, () => 'http://127.0.0.1:7070');
const closedStore = await openSqliteStore(join(dir, 'closed.db'));
await closedStore.close(); // minting into a closed store fails for real
const labelled = async (id: number) =>
  (
    await store.db
      .selectFrom('api_tokens')
      .select('hash')
      .where('label', '=', `resource-instance:${id}`)
      .execute()
  ).length > 0;
wellConformance({
  kind: 'token',
  make: (type, capacity) => well(type, { kind: 'token', capacity }, minter),
  failing: (type) =>
    well(
      type,
      { kind: 'token', capacity: 1 },
      new ProjectTokenMinter({ store: closedStore, now: Date.now }, () => ''),
    ),
  exists: async (req) => labelled(req.instanceId),
  use: async (metadata) => {
    const principal = await authenticate(ctx, metadata.token);
    assert.deepEqual(principal, { kind: 'project', project: metadata.project, jobId: 7, access: 'read' });
  },
  fields: ['token', 'url', 'project'],
  close: () => store.close(),
});
