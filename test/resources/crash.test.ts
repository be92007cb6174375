/**
 * kill -9 of the server while resource instances are being created and while jobs hold them,
 * then a restart: no instance is left alive. An exec well's scripts record every creation and
 * destruction in files, so "alive" is checked outside berth.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, it } from 'node:test';
import { getJob, submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('berth-rcrash-');
const alive = join(dir, 'alive'); // one file per live instance
const gate = join(dir, 'gate'); // creations of type "slow" wait for it
let server: ServerProcess | undefined;

after(async () => {
  if (server) await killHard(server);
  rmSync(dir, { recursive: true, force: true });
});

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\nset -e\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const liveInstances = () => readdirSync(alive).sort();

it('leaves no instance alive after kill -9 during creation and while held', async () => {
  mkdirSync(alive);
  const create = script(
    'create.sh',
    `touch ${alive}/$BERTH_RESOURCE_TYPE-$BERTH_RESOURCE_ID\n[ "$BERTH_RESOURCE_TYPE" = slow ] && while [ ! -e ${gate} ]; do sleep 0.05; done\necho '{"id": "'$BERTH_RESOURCE_ID'"}'`,
  );
  const destroy = script('destroy.sh', `rm -f ${alive}/$BERTH_RESOURCE_TYPE-$BERTH_RESOURCE_ID`);
  const config = join(dir, 'berth.yaml');
  writeFileSync(
    config,
    [
      'graceSeconds: 1',
      'resources:',
      `  fast: { kind: exec, capacity: 2, create: ${create}, destroy: ${destroy} }`,
      `  slow: { kind: exec, capacity: 2, create: ${create}, destroy: ${destroy} }`,
    ].join('\n'),
  );
  const data = join(dir, 'data');
  server = await spawnServer(data, config);
  const { api, token } = server;
  // A job that holds "fast" and runs; a job stuck creating "slow".
  const holding = await submit(api, token, 'default', { resources: ['fast'], command: ['sleep', '300'] });
  await waitFor('the holder to run', async () => (await getJob(api, token, holding.id)).state === 'running');
  const creating = await submit(api, token, 'default', { resources: ['slow'], command: ['true'] });
  await waitFor('an instance of slow to be in creation', () =>
    liveInstances().some((f) => f.startsWith('slow-')),
  );
  assert.deepEqual(
    liveInstances().map((f) => f.split('-')[0]),
    ['fast', 'slow'],
  );

  await killHard(server);
  server = undefined;
  writeFileSync(gate, ''); // let the interrupted creation script finish on its own

  server = await spawnServer(data, config);
  const held = await waitDone(server.api, server.token, holding.id);
  assert.equal(held.state, 'failed');
  assert.match(held.reason, /server restarted/);
  const second = await waitDone(server.api, server.token, creating.id);
  assert.equal(second.state, 'succeeded', 'an admitted job that never started gets new resources and runs');
  await waitFor('every instance destroyed', async () => {
    const rows = (await call<{ state: string }[]>(server!.api, server!.token, 'GET', '/resource-instances'))
      .body;
    return (
      rows.length >= 3 &&
      rows.every((r) => r.state === 'destroyed' || r.state === 'failed') &&
      liveInstances().length === 0
    );
  });
});
