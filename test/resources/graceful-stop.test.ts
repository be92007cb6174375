/**
 * SIGTERM while a resource is being created: the server lets the creation finish and records it
 * before it closes its store. It used to close the store at once; the creation then finished
 * into a closed store ("driver has already been destroyed"), and its row said `creating` for an
 * instance that existed (the next start destroyed it all the same, by id).
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, it } from 'node:test';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import { submit } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { scratchDir } from '../helpers/scratch.js';
import { serverDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';

const dir = scratchDir('berth-rstop-');
let server: ServerProcess | undefined;

after(async () => {
  if (server && server.child.exitCode === null) await killHard(server);
  rmSync(dir, { recursive: true, force: true });
});

it('lets a creation under way finish and records it before the store closes', async () => {
  const started = join(dir, 'started');
  // A well that takes a second to create: the stop comes in the middle of it.
  const create = join(dir, 'create.sh');
  writeFileSync(create, `#!/bin/sh\ntouch ${started}\nsleep 1\necho '{"id": "'$BERTH_RESOURCE_ID'"}'\n`);
  const destroy = join(dir, 'destroy.sh');
  writeFileSync(destroy, '#!/bin/sh\ntrue\n');
  for (const f of [create, destroy]) chmodSync(f, 0o755);
  const config = join(dir, 'berth.yaml');
  writeFileSync(
    config,
    `graceSeconds: 1\nresources:\n  slow: { kind: exec, capacity: 1, create: ${create}, destroy: ${destroy} }\n`,
  );
  const data = join(dir, 'data');
  server = await spawnServer(data, config);
  const job = await submit(server.api, server.token, 'default', { resources: ['slow'], command: ['true'] });
  await waitFor('the creation to start', () => existsSync(started));

  const { child } = server;
  child.kill('SIGTERM');
  const code = await waitFor(
    'the server to exit after SIGTERM',
    () => child.exitCode ?? child.signalCode ?? undefined,
  );
  assert.equal(code, 0, server.output());
  assert.doesNotMatch(server.output(), /destroyed|controller:/, 'no write after the store closed');

  const database = await serverDatabase(data);
  const store = database
    ? await openPostgresStore(database.url, { max: 1 })
    : await openSqliteStore(join(data, 'berth.db'));
  try {
    const rows = await store.db
      .selectFrom('resource_instances')
      .select(['state', 'metadata'])
      .where('job_id', '=', job.id)
      .execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.state, 'ready', 'the creation that finished is recorded');
    const events = await store.db.selectFrom('events').select('type').where('job_id', '=', job.id).execute();
    assert.ok(
      events.some((e) => e.type === 'resource-ready'),
      `events: ${events.map((e) => e.type).join(', ')}`,
    );
  } finally {
    await store.close();
  }
});
