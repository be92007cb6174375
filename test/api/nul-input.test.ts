/**
 * A NUL character (U+0000) in any part of a request — a JSON body's value or key however deep,
 * the query string, a path parameter — is refused with a 400 that names the field, on every route
 * and before anything is written (api/nul-guard.ts). PostgreSQL's text cannot hold one: it used
 * to answer 500, or fail a batched write in a way taken for the database being down. Job names
 * refuse every control character as well.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { waitDone } from '../helpers/jobs.js';
import { assertError, useServer } from './fixtures.js';

const ctx = useServer();
const { api } = ctx;

const jobCount = async (): Promise<string | null> =>
  (await api(ctx.admin, 'GET', '/projects/default/jobs?limit=1')).headers.get('x-total-count');

interface Row {
  label: string;
  method: string;
  path: string;
  body?: unknown;
  message: RegExp;
}

const rows: Row[] = [
  {
    label: "a job's name",
    method: 'POST',
    path: '/projects/default/jobs',
    body: { name: 'a\u0000b', command: ['true'] },
    message: /^body field "name" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: "a job's idempotency key",
    method: 'POST',
    path: '/projects/default/jobs',
    body: { idempotencyKey: 'k\u0000', command: ['true'] },
    message: /^body field "idempotencyKey" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: 'a value nested in the body (an argument of the command)',
    method: 'POST',
    path: '/projects/default/jobs',
    body: { command: ['echo', 'x\u0000y'] },
    message: /^body field "command\.1" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: 'a key of the body (an environment variable name)',
    method: 'POST',
    path: '/projects/default/jobs',
    body: { command: ['true'], env: { 'A\u0000B': '1' } },
    message: /^body field "env" must not have a key with a NUL character \(U\+0000\)$/,
  },
  {
    label: "another route's body (a user's name)",
    method: 'POST',
    path: '/users',
    body: { name: 'carol\u0000' },
    message: /^body field "name" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: 'the query string',
    method: 'GET',
    path: '/projects/default/jobs?cursor=a%00b',
    message: /^query field "cursor" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: 'a path parameter',
    method: 'GET',
    path: '/projects/de%00fault/jobs',
    message: /^path field "name" must not contain a NUL character \(U\+0000\)$/,
  },
  {
    label: 'the job token route: a finish message',
    method: 'POST',
    path: '/job/self/finish',
    body: { outcome: 'exited', exitCode: 1, signal: null, message: 'bad\u0000' },
    message: /^body field "message" must not contain a NUL character \(U\+0000\)$/,
  },
];

describe('a NUL character anywhere in a request', () => {
  for (const row of rows) {
    test(`${row.label} → 400 naming the field`, async () => {
      const before = await jobCount();
      const res = await api(ctx.admin, row.method, row.path, row.body);
      assertError(res, 400, 'bad_request', row.message, `${row.method} ${row.path}`);
      assert.equal(await jobCount(), before, 'nothing was submitted');
    });
  }

  test('a NUL in a JSON body written as \\u0000 is refused the same way', async () => {
    const res = await api(
      ctx.admin,
      'POST',
      '/projects/default/jobs',
      '{"name":"x\\u0000","command":["true"]}',
    );
    assertError(res, 400, 'bad_request', /^body field "name" must not contain a NUL character/);
  });
});

describe("control characters in a job's name", () => {
  for (const [what, name] of [
    ['a newline', 'two\nlines'],
    ['an escape (terminal colours)', '\u001b[31mred'],
    ['a DEL', 'x\u007f'],
  ] as const) {
    test(`${what} → 400`, async () => {
      const before = await jobCount();
      const res = await api(ctx.admin, 'POST', '/projects/default/jobs', { name, command: ['true'] });
      assertError(
        res,
        400,
        'bad_request',
        /^body field "name" must not contain control characters \(U\+0000 to U\+001F, U\+007F\)$/,
      );
      assert.equal(await jobCount(), before);
    });
  }

  test('any other text is a name: spaces, punctuation, any script', async () => {
    const res = await api(ctx.admin, 'POST', '/projects/default/jobs', {
      name: 'nightly build — ünïcödé ✓',
      command: ['true'],
    });
    assert.equal(res.status, 201, res.text);
    // Ended before the server closes, so that nothing of it is left running then.
    await waitDone(ctx.server.api, ctx.admin, (res.body as { id: number }).id);
  });
});
