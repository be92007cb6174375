/**
 * Review hardening (issue #17): no number in the API may be infinite; a followed log answers with
 * its headers before the job prints anything; a body in a content coding the server does not
 * decode is refused with 415.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { getJob, quietJob as quietJobIn, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { assertError, assertStatus, createQueue, useServer } from './fixtures.js';
import { scratchDir } from '../helpers/scratch.js';

const ctx = useServer(
  async ({ api, admin }) => {
    await createQueue(api, admin, 'q-hard');
    assertStatus(await api(admin, 'POST', '/projects', { name: 'p-hard', clusterQueue: 'q-hard' }), 201);
  },
  { config: localFactoryConfig() },
);
const { api } = ctx;

let scratch: string;
before(() => {
  scratch = scratchDir('berth-hardening-');
});
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A job that stays running until released (helpers/jobs.ts), in project default. */
const quietJob = (name: string) => quietJobIn(ctx.server.api, ctx.admin, 'default', scratch, name);

void describe('numbers are finite everywhere', () => {
  test('the agent protocol: a finish with exitCode 1e400 is refused and the job ends as it did', async () => {
    const job = await quietJob('finish');
    try {
      const token = await job.token();
      for (const exitCode of ['1e400', '-1e400']) {
        const body = `{"outcome":"exited","exitCode":${exitCode},"signal":null}`;
        const res = await api(token, 'POST', '/job/self/finish', body);
        assertError(res, 400, 'bad_request', /body field "exitCode" must be a finite number/, exitCode);
      }
      assert.equal((await getJob(ctx.server.api, ctx.admin, job.id)).state, 'running', 'refused: no change');
    } finally {
      job.release();
    }
    const done = await waitDone(ctx.server.api, ctx.admin, job.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.exitCode, 0);
  });

  // [method, path, body, the field the message names]: one numeric field of each kind and place.
  const rows: [string, string, string | undefined, string][] = [
    ['POST', '/projects', '{"name":"p-inf","clusterQueue":"q-hard","weight":1e400}', 'body field "weight"'],
    ['PATCH', '/projects/p-hard', '{"weight":1e400}', 'body field "weight"'],
    ['POST', '/cluster-queues', '{"name":"q-inf","quota":{"cpu":1e400}}', 'body field "quota.cpu"'],
    ['PATCH', '/cluster-queues/q-hard', '{"lendingLimit":{"cpu":-1e400}}', 'body field "lendingLimit.cpu"'],
    [
      'POST',
      '/projects/p-hard/jobs',
      '{"command":["true"],"timeoutSeconds":1e400}',
      'body field "timeoutSeconds"',
    ],
    ['POST', '/projects/p-hard/jobs', '{"command":["true"],"priority":-1e400}', 'body field "priority"'],
    [
      'POST',
      '/projects/p-hard/jobs',
      '{"command":["true"],"requests":{"cpu":1e400}}',
      'body field "requests.cpu"',
    ],
    ['POST', '/projects/p-hard/jobs', '{"command":["true"],"dependsOn":[1e400]}', 'body field "dependsOn.0"'],
    ['POST', '/priority-classes', '{"name":"pc-inf","value":1e400}', 'body field "value"'],
    ['GET', '/jobs/Infinity', undefined, 'path field "id"'],
    ['GET', '/cluster-queues/q-hard/pending?offset=Infinity', undefined, 'query field "offset"'],
    ['GET', '/projects/p-hard/jobs?before=-Infinity', undefined, 'query field "before"'],
  ];
  for (const [method, path, body, field] of rows) {
    test(`${method} ${path}: ${field} → 400`, async () => {
      const res = await api(ctx.admin, method, path, body);
      assertError(res, 400, 'bad_request', new RegExp(`^${field} must be a finite number$`), path);
    });
  }

  test('a deeply nested 1e400 is a 400 with a short message, not a crash', async () => {
    const depth = 100_000;
    const body = `{"command":["true"],"env":${'['.repeat(depth)}1e400${']'.repeat(depth)}}`;
    const res = await api(ctx.admin, 'POST', '/projects/p-hard/jobs', body);
    const error = assertError(res, 400, 'bad_request', /body field "env/);
    assert.ok(error.error.message.length < 300, error.error.message);
  });

  test('finite numbers still pass', async () => {
    const res = await api(ctx.admin, 'PATCH', '/projects/p-hard', '{"weight":1.5e2}');
    assertStatus(res, 200);
    assert.equal((res.body as { weight: number }).weight, 150);
  });
});

void describe('project weights', () => {
  // More than 0, as the schema asks, yet a share divided by it is Infinity: the weight of 0.
  for (const [method, path, body] of [
    ['POST', '/projects', '{"name":"p-tiny","clusterQueue":"q-hard","weight":5e-324}'],
    ['PATCH', '/projects/p-hard', '{"weight":5e-324}'],
    ['PATCH', '/projects/p-hard', '{"weight":1e-7}'],
  ] as const) {
    test(`${method} ${path} ${body}: a weight below the least is a 400`, async () => {
      const res = await api(ctx.admin, method, path, body);
      assertError(res, 400, 'bad_request', /^weight \S+ is too small: the least is 0\.000001/);
    });
  }

  test('the least weight itself is taken, and nothing changed by the refusals', async () => {
    assertStatus(await api(ctx.admin, 'GET', '/projects/p-tiny'), 404);
    const res = await api<{ weight: number }>(ctx.admin, 'PATCH', '/projects/p-hard', '{"weight":0.000001}');
    assertStatus(res, 200);
    assert.equal(res.body.weight, 0.000001);
  });
});

void describe('following a log', () => {
  test('a running job that printed nothing answers with its headers at once', async () => {
    const job = await quietJob('follow');
    let res: Response;
    try {
      // fetch resolves when the status and headers arrive; the job runs until it is released, so
      // without them at once this times out whatever the deadline.
      res = await fetch(`${ctx.server.api}/jobs/${job.id}/logs?follow=true`, {
        headers: { authorization: `Bearer ${ctx.admin}` },
        signal: AbortSignal.timeout(3000),
      });
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      assert.equal((await getJob(ctx.server.api, ctx.admin, job.id)).state, 'running', 'still running');
    } finally {
      job.release();
    }
    assert.equal(await res.text(), '', 'the stream ends with the job, empty');
    await waitDone(ctx.server.api, ctx.admin, job.id);
  });
});

void describe('content codings', () => {
  const json = JSON.stringify({ name: 'zipped' });
  const rows: [coding: string, body: Buffer | string, named: string][] = [
    ['gzip', gzipSync(json), 'gzip'],
    ['GZIP', gzipSync(json), 'gzip'],
    ['deflate', json, 'deflate'],
    ['br', json, 'br'],
    ['identity, gzip', gzipSync(json), 'gzip'],
  ];
  for (const [coding, body, named] of rows) {
    test(`Content-Encoding: ${coding} → 415`, async () => {
      const res = await fetch(`${ctx.server.api}/users`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ctx.admin}`,
          'content-type': 'application/json',
          'content-encoding': coding,
        },
        body,
      });
      const text = await res.text();
      assertError(
        { status: res.status, body: JSON.parse(text) as unknown, text, headers: res.headers },
        415,
        'unsupported_media_type',
        new RegExp(`Content-Encoding "${named}".*uncompressed`),
      );
      assert.equal(res.headers.get('accept-encoding'), 'identity');
      assertStatus(await api(ctx.admin, 'GET', '/users/zipped'), 404, 'no user was made');
    });
  }

  test('Content-Encoding: identity is the body as sent', async () => {
    assertStatus(
      await api(ctx.admin, 'POST', '/users', { name: 'plain' }, { 'content-encoding': 'identity' }),
      201,
    );
  });

  test('a bodyless request is not refused for its Content-Encoding', async () => {
    assertStatus(await api(ctx.admin, 'GET', '/whoami', undefined, { 'content-encoding': 'gzip' }), 200);
  });
});
