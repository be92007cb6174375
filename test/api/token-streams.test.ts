/**
 * A token that stops working ends what it holds open: the live stream (`GET /stream`) and a
 * followed log (`GET /jobs/{id}/logs?follow=true`) end when the token is revoked or expires, while
 * the job they follow still runs.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { getJob, quietJob, waitDone, type QuietJob } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { Stream } from '../helpers/sse.js';
import { scratchDir } from '../helpers/scratch.js';
import { waitFor } from '../helpers/wait.js';
import { assertStatus, createUser, useServer } from './fixtures.js';

const ctx = useServer(
  async ({ api, admin }) => {
    await createUser(api, admin, 'rita');
    assertStatus(await api(admin, 'PUT', '/projects/default/members/rita', { role: 'viewer' }), 200);
  },
  { config: localFactoryConfig() },
);

let scratch: string;
let job: QuietJob;

/** A new token of rita's; `expiresIn` as the API takes it. */
async function ritaToken(expiresIn?: string): Promise<{ token: string; id: string }> {
  const res = await ctx.api<{ token: string; id: string }>(ctx.admin, 'POST', '/users/rita/tokens', {
    label: 'streams',
    ...(expiresIn ? { expiresIn } : {}),
  });
  assertStatus(res, 201);
  return res.body;
}

/** A followed log, read to its end: `ended` says whether it has. */
async function follow(token: string) {
  const res = await fetch(`${ctx.server.api}/jobs/${job.id}/logs?follow=true`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(res.status, 200);
  const state = { ended: false };
  void (async () => {
    try {
      for await (const chunk of res.body!) void chunk;
    } catch {
      // cut off: ended too
    }
    state.ended = true;
  })();
  return state;
}

/** Both are open now, and end (within `ms`) while the job still runs. */
async function bothEnd(stream: Stream, log: { ended: boolean }, ms: number) {
  await waitFor('the live stream to end', () => stream.ended, ms);
  await waitFor('the followed log to end', () => log.ended, ms);
  assert.equal((await getJob(ctx.server.api, ctx.admin, job.id)).state, 'running', 'the job runs on');
}

void describe('streams end with their token', () => {
  before(async () => {
    scratch = scratchDir('berth-token-streams-');
    job = await quietJob(ctx.server.api, ctx.admin, 'default', scratch, 'followed');
  });
  after(async () => {
    job.release();
    await waitDone(ctx.server.api, ctx.admin, job.id);
    rmSync(scratch, { recursive: true, force: true });
  });

  test('a revoked token ends its live stream and its followed log', async () => {
    const { token, id } = await ritaToken();
    const stream = await Stream.open(ctx.server.api, token);
    await stream.next('hello', 'the hello event');
    const log = await follow(token);
    assert.equal(stream.ended || log.ended, false, 'open while the token works');
    assertStatus(await ctx.api(ctx.admin, 'DELETE', `/tokens/${id}`), 200);
    await bothEnd(stream, log, 5_000);
  });

  test('an expiring token ends its live stream and its followed log when it expires', async () => {
    const { token } = await ritaToken('3s');
    const stream = await Stream.open(ctx.server.api, token);
    await stream.next('hello', 'the hello event');
    const log = await follow(token);
    assert.equal(stream.ended || log.ended, false, 'open while the token works');
    await bothEnd(stream, log, 10_000);
  });
});
