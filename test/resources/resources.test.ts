/**
 * Managed resources end to end: real wells (semaphore, token, postgres on the real server at
 * 127.0.0.1:5432), acquisition in order, metadata only inside the job, nothing left behind.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { call, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir } from '../helpers/scratch.js';
import { berthShellCommand } from '../helpers/berth-command.js';

let s: TestServer;
let dir: string;
const PG = 'postgres://postgres@127.0.0.1:5432/postgres';

before(async () => {
  dir = scratchDir('berth-resources-');
  writeFileSync(
    join(dir, 'berth.yaml'),
    [
      'graceSeconds: 1',
      'factories:',
      '  local: { kind: local, capacity: 4 }',
      '  one: { kind: local, capacity: 1 }',
      'targets:',
      '  local: { factory: local }',
      '  t: { factory: one }',
      'resources:',
      '  licence: { kind: semaphore, capacity: 1 }',
      '  r: { kind: semaphore, capacity: 1 }',
      '  tok: { kind: token, capacity: 4 }',
      `  scratch-db: { kind: postgres, capacity: 2, url: "${PG}", privilege: resource.scratch-db }`,
    ].join('\n'),
  );
  s = await startTestServer({ configFile: join(dir, 'berth.yaml') });
});
after(async () => s.close());

const gateScript = (gate: string, then = '') => `while [ ! -e ${gate} ]; do sleep 0.05; done; ${then}`;
const psql = (sql: string) => execFileSync('psql', [PG, '-Atc', sql], { encoding: 'utf8' }).trim();

describe('acquisition', () => {
  it('the buildomat case: capacity 1 for resource R and for the factory, both jobs finish', async () => {
    const gate = join(dir, 'gate-buildomat');
    const j1 = await submit(s.api, s.adminToken, 'default', {
      script: gateScript(gate),
      resources: ['r'],
      target: 't',
    });
    const j2 = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      resources: ['r'],
      target: 't',
    });
    await waitFor('j1 to run', async () => (await getJob(s.api, s.adminToken, j1.id)).state === 'running');
    const waiting = await getJob(s.api, s.adminToken, j2.id);
    assert.equal(waiting.state, 'admitted');
    assert.match(waiting.reason, /^waiting for resource r: 1\/1 in use; position 1$/);
    writeFileSync(gate, '');
    assert.equal((await waitDone(s.api, s.adminToken, j1.id)).state, 'succeeded');
    assert.equal((await waitDone(s.api, s.adminToken, j2.id)).state, 'succeeded');
  });

  it('acquires resources in lexicographic order, then the worker, and releases them all', async () => {
    const job = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      resources: ['r', 'licence'],
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    assert.equal(done.state, 'succeeded');
    const steps = (await events(s.api, s.adminToken, job.id)).map((e) => e.type + ' ' + e.message);
    const order = steps
      .filter((t) => /^(resource-ready|worker-creating)/.test(t))
      .map((t) => t.split(' ').slice(0, 3).join(' '));
    assert.deepEqual(order, [
      'resource-ready resource licence',
      'resource-ready resource r',
      'worker-creating worker ' + done.worker!.id,
    ]);
    const instances = (
      await call<{ jobId: number; state: string }[]>(s.api, s.adminToken, 'GET', '/resource-instances')
    ).body.filter((i) => i.jobId === job.id);
    assert.equal(instances.length, 2);
    assert.ok(instances.every((i) => i.state === 'destroyed'));
  });

  it('a cancelled job waiting for a resource releases what it holds', async () => {
    const gate = join(dir, 'gate-cancel');
    const holder = await submit(s.api, s.adminToken, 'default', {
      script: gateScript(gate),
      resources: ['r'],
    });
    await waitFor(
      'holder to run',
      async () => (await getJob(s.api, s.adminToken, holder.id)).state === 'running',
    );
    const waiter = await submit(s.api, s.adminToken, 'default', {
      command: ['true'],
      resources: ['licence', 'r'],
    });
    await waitFor('waiter to hold licence and wait for r', async () =>
      /waiting for resource r/.test((await getJob(s.api, s.adminToken, waiter.id)).reason),
    );
    await call(s.api, s.adminToken, 'POST', `/jobs/${waiter.id}/cancel`);
    const done = await waitDone(s.api, s.adminToken, waiter.id);
    assert.equal(done.state, 'cancelled');
    const types = (
      await call<{ name: string; inUse: number }[]>(s.api, s.adminToken, 'GET', '/resource-types')
    ).body;
    assert.equal(types.find((t) => t.name === 'licence')?.inUse, 0, 'the licence it held is free again');
    writeFileSync(gate, '');
    await waitDone(s.api, s.adminToken, holder.id);
  });
});

describe('metadata', () => {
  it('a postgres database usable from inside the job, gone afterwards, never shown outside', async () => {
    await call(s.api, s.adminToken, 'PUT', '/projects/default/privileges/resource.scratch-db');
    const job = await submit(s.api, s.adminToken, 'default', {
      resources: ['scratch-db'],
      script: [
        'psql "$BERTH_RESOURCE_SCRATCH_DB_URL" -Atc "create table t (x int); insert into t values (41), (1); select sum(x) from t"',
        'echo "db=$BERTH_RESOURCE_SCRATCH_DB_DATABASE"',
      ].join('; '),
    });
    const done = await waitDone(s.api, s.adminToken, job.id);
    const logs = (await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`)).text;
    assert.equal(done.state, 'succeeded', logs);
    assert.match(logs, /^42$/m);
    const database = /db=(\S+)/.exec(logs)![1]!;
    assert.equal(psql(`select count(*) from pg_database where datname = '${database}'`), '0');
    assert.equal(psql(`select count(*) from pg_roles where rolname = '${database}'`), '0');
    // Not in the job, its events, or the instance list — not even for an admin.
    const everything = JSON.stringify([
      (await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}`)).body,
      await events(s.api, s.adminToken, job.id),
      (await call(s.api, s.adminToken, 'GET', '/resource-instances')).body,
    ]);
    assert.doesNotMatch(everything, /password|postgres:\/\/berth/);
  });

  it('refuses a resource whose privilege the project lacks', async () => {
    await call(s.api, s.adminToken, 'POST', '/projects', { name: 'poor', clusterQueue: 'default' });
    const r = await call<{ error: { message: string } }>(s.api, s.adminToken, 'POST', '/projects/poor/jobs', {
      command: ['true'],
      resources: ['scratch-db'],
    });
    assert.equal(r.status, 422);
    assert.match(r.body.error.message, /requires privilege resource.scratch-db/);
  });

  it("a token limited to the job's project, valid only while the job runs", async () => {
    const out = join(dir, 'token.txt');
    const gate = join(dir, 'gate-token');
    const job = await submit(s.api, s.adminToken, 'default', {
      resources: ['tok'],
      script: `echo "$BERTH_RESOURCE_TOK_TOKEN" > ${out}; ${gateScript(gate)}`,
    });
    const token = await waitFor('the job to write its token', () => {
      try {
        return readFileSync(out, 'utf8').trim() || undefined;
      } catch {
        return undefined;
      }
    });
    assert.equal((await call(s.api, token, 'GET', '/projects/default')).status, 200);
    assert.equal((await call(s.api, token, 'GET', '/projects/poor')).status, 404);
    assert.equal((await call(s.api, token, 'GET', '/users')).status, 403);
    const sub = await call(s.api, token, 'POST', '/projects/default/jobs', { command: ['true'] });
    assert.equal(sub.status, 403, 'it reads only: submitting needs a well with access: submit');
    writeFileSync(gate, '');
    await waitDone(s.api, s.adminToken, job.id);
    assert.equal((await call(s.api, token, 'GET', '/projects/default')).status, 401, 'dead with the job');
  });

  it('GET /job/self shows the metadata to the job itself', async () => {
    const out = join(dir, 'self.json');
    const job = await submit(s.api, s.adminToken, 'default', {
      resources: ['tok'],
      script: `curl -s -H "Authorization: Bearer $BERTH_TOKEN" "$BERTH_URL/api/v1/job/self" > ${out}`,
    });
    assert.equal((await waitDone(s.api, s.adminToken, job.id)).state, 'succeeded');
    const self = JSON.parse(readFileSync(out, 'utf8')) as {
      id: number;
      resources: { type: string; metadata: Record<string, string> }[];
    };
    assert.equal(self.id, job.id);
    assert.equal(self.resources[0]?.type, 'tok');
    assert.match(self.resources[0]?.metadata.token ?? '', /^berth_/);
  });
});

describe('the CLI', () => {
  it('berth job meta prints all, one resource, or one field inside the job', async () => {
    const out = join(dir, 'meta');
    // Absolute paths: the job runs in its own working directory.
    const cli = berthShellCommand();
    const job = await submit(s.api, s.adminToken, 'default', {
      resources: ['tok', 'licence'],
      script: [
        'set -e',
        `${cli} job meta -o json > ${out}.all`,
        `${cli} job meta tok project > ${out}.field`,
        `${cli} job meta nope 2> ${out}.err || echo "exit=$?" >> ${out}.err`,
      ].join('; '),
    });
    const done = await waitDone(s.api, s.adminToken, job.id, 60_000);
    assert.equal(
      done.state,
      'succeeded',
      (await call(s.api, s.adminToken, 'GET', `/jobs/${job.id}/logs`)).text,
    );
    const all = JSON.parse(readFileSync(`${out}.all`, 'utf8')) as Record<string, Record<string, string>>;
    assert.deepEqual(Object.keys(all).sort(), ['licence', 'tok']);
    assert.equal(all.tok?.project, 'default');
    assert.equal(readFileSync(`${out}.field`, 'utf8'), 'default\n');
    assert.match(
      readFileSync(`${out}.err`, 'utf8'),
      /^berth: this job holds no resource nope \(it holds: licence, tok\)\nexit=1\n$/,
    );
  });
});
