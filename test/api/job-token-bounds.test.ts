/**
 * What a job token can hold on the server (issue #27): job code is untrusted and holds its token,
 * so the long polls it opens are bounded per rank, and the job still runs to its end.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { MAX_OPEN_LONG_POLLS } from '../../src/controller/long-poll-slots.js';
import { quietJob, waitDone } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { waitFor } from '../helpers/wait.js';
import { useServer } from './fixtures.js';

const ctx = useServer(undefined, { config: localFactoryConfig() });

let scratch: string;
before(() => {
  scratch = scratchDir('berth-token-bounds-');
});
after(() => rmSync(scratch, { recursive: true, force: true }));

void describe('long polls of a job token', () => {
  test(`at most ${MAX_OPEN_LONG_POLLS} heartbeat polls per rank stay open; the job still runs to its end`, async () => {
    const job = await quietJob(ctx.server.api, ctx.admin, 'default', scratch, 'polls');
    const token = await job.token();
    const opened = 12;
    const cut = new AbortController();
    const answers: { status: number; body: unknown }[] = [];
    // A minute each: without the bound, none would answer before the deadline below.
    const polls = Array.from({ length: opened }, () =>
      fetch(`${ctx.server.api}/job/self/heartbeat?wait=60`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        signal: cut.signal,
      })
        .then(async (r) => answers.push({ status: r.status, body: await r.json() }))
        .catch(() => undefined),
    );
    try {
      // Each poll past the bound ends the oldest open one; the agent's own polls count too.
      await waitFor(
        `all but ${MAX_OPEN_LONG_POLLS} of ${opened} polls to be answered`,
        () => answers.length >= opened - MAX_OPEN_LONG_POLLS,
        10_000,
      );
      // Answered as a heartbeat is (200, not stopping), never refused: an agent stops its job on a 4xx.
      for (const a of answers) assert.deepEqual(a, { status: 200, body: { cancel: false } });
    } finally {
      job.release();
    }
    const done = await waitDone(ctx.server.api, ctx.admin, job.id);
    assert.equal(done.state, 'succeeded');
    assert.equal(done.exitCode, 0);
    cut.abort();
    await Promise.all(polls);
  });
});
