/**
 * Job arrays end to end on the local factory, over real HTTP with real processes: one submission,
 * a task per index that knows its array and index; `%K` caps the tasks in play; the array is one
 * entry in a collapsed list, its tasks one by one on request; cancelling the array cancels every
 * task, the waiting ones without running.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

interface TaskView extends JobView {
  arrayId: number | null;
  arrayIndex: number | null;
  array?: ArrayView;
}

interface ArrayView {
  id: number;
  spec: string;
  size: number;
  throttle: number | null;
  counts: Record<'queued' | 'admitted' | 'running' | 'succeeded' | 'failed' | 'cancelled', number>;
  state: string;
}

interface ErrorBody {
  error: { message: string };
}

let s: TestServer;
let scratch: string;

before(async () => {
  scratch = scratchDir('berth-arrays-');
  s = await startTestServer({ config: localFactoryConfig(8) });
});
after(async () => {
  await s.close();
  rmSync(scratch, { recursive: true, force: true });
});

const arrayOf = async (id: number): Promise<ArrayView> =>
  (await call<ArrayView>(s.api, s.adminToken, 'GET', `/arrays/${id}`)).body;
const tasksOf = async (id: number): Promise<TaskView[]> =>
  (
    await call<TaskView[]>(
      s.api,
      s.adminToken,
      'GET',
      `/projects/default/jobs?array=${id}&sort=id&limit=1000`,
    )
  ).body;
const settled = (id: number) =>
  waitFor(`array ${id} to finish`, async () => {
    const a = await arrayOf(id);
    return a.counts.queued + a.counts.admitted + a.counts.running === 0 ? a : undefined;
  });

describe('job arrays', () => {
  it('runs one task per index, each with BERTH_ARRAY_ID and BERTH_ARRAY_INDEX', async () => {
    const head = (await submit(s.api, s.adminToken, 'default', {
      script: 'echo "$BERTH_ARRAY_ID/$BERTH_ARRAY_INDEX"',
      array: '0-2,10-14:2',
    })) as TaskView;
    assert.equal(head.arrayId, head.id);
    assert.equal(head.arrayIndex, 0);
    const done = await settled(head.id);
    assert.deepEqual(
      { spec: done.spec, size: done.size, state: done.state, succeeded: done.counts.succeeded },
      { spec: '0-2,10,12,14', size: 6, state: 'succeeded', succeeded: 6 },
    );
    const tasks = await tasksOf(head.id);
    assert.deepEqual(
      tasks.map((t) => t.arrayIndex),
      [0, 1, 2, 10, 12, 14],
    );
    for (const t of tasks) {
      const log = (await call(s.api, s.adminToken, 'GET', `/jobs/${t.id}/logs`)).text;
      assert.equal(log, `${head.id}/${t.arrayIndex}\n`);
    }
    const twelve = await call<TaskView>(s.api, s.adminToken, 'GET', `/arrays/${head.id}/tasks/12`);
    assert.equal(twelve.body.id, tasks[4]!.id);
    const missing = await call<ErrorBody>(s.api, s.adminToken, 'GET', `/arrays/${head.id}/tasks/3`);
    assert.equal(missing.status, 404);
    assert.match(missing.body.error.message, /has no task 3/);
  });

  it('runs at most K tasks at once with %K, the others waiting their turn outside the scheduler', async () => {
    const log = sharedFile(join(scratch, 'throttle.log'));
    const gate = join(scratch, 'throttle-gate');
    const head = await submit(s.api, s.adminToken, 'default', {
      script: `echo "start $BERTH_ARRAY_INDEX" >> ${log}; while [ ! -e ${gate} ]; do sleep 0.05; done; echo "end $BERTH_ARRAY_INDEX" >> ${log}`,
      array: '0-5%2',
    });
    await waitFor('two tasks to run', async () => (await arrayOf(head.id)).counts.running === 2);
    const waiting = (await tasksOf(head.id)).filter((t) => t.state === 'queued');
    assert.equal(waiting.length, 4);
    for (const t of waiting) {
      assert.match(t.reason, /^waiting for its turn: array \d+ runs at most 2 tasks at once \(2 in play\)$/);
      assert.equal(t.position, null);
    }
    writeFileSync(gate, '');
    let most = 0;
    const done = await waitFor('the array to finish', async () => {
      const a = await arrayOf(head.id);
      most = Math.max(most, a.counts.admitted + a.counts.running);
      return a.counts.succeeded === 6 ? a : undefined;
    });
    assert.equal(done.state, 'succeeded');
    assert.ok(most <= 2, `${most} tasks in play at once`);
    // No task started before two others had ended, after the first two.
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    let running = 0;
    for (const line of lines) {
      running += line.startsWith('start') ? 1 : -1;
      assert.ok(running <= 2, `more than 2 running at: ${lines.join(' | ')}`);
    }
  });

  it('lists an array as one entry with collapse, and its tasks with array=ID', async () => {
    const head = await submit(s.api, s.adminToken, 'default', { command: ['true'], array: '1-50' });
    await settled(head.id);
    const plain = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    const collapsed = (
      await call<TaskView[]>(s.api, s.adminToken, 'GET', '/projects/default/jobs?collapse=true&limit=2')
    ).body;
    assert.deepEqual(
      collapsed.map((j) => j.id),
      [plain.id, head.id],
    );
    assert.equal(collapsed[0]!.array, undefined);
    assert.deepEqual(
      { size: collapsed[1]!.array?.size, succeeded: collapsed[1]!.array?.counts.succeeded },
      { size: 50, succeeded: 50 },
    );
    assert.equal((await tasksOf(head.id)).length, 50);
    const page = await call<TaskView[]>(
      s.api,
      s.adminToken,
      'GET',
      `/projects/default/jobs?array=${head.id}&limit=5`,
    );
    assert.equal(page.headers.get('x-total-count'), '50', "the total counts the array's tasks only");
  });

  it('cancels every task of an array; those waiting their turn never run', async () => {
    const log = sharedFile(join(scratch, 'cancel.log'));
    const head = await submit(s.api, s.adminToken, 'default', {
      script: `echo "start $BERTH_ARRAY_INDEX" >> ${log}; sleep 60`,
      array: '0-9%1',
    });
    await waitFor('the first task to run', async () => (await arrayOf(head.id)).counts.running === 1);
    // "running" says its process was started, not that its first line has run (in a sandbox that
    // takes a few milliseconds more): cancel once it has written, so the log has one line to show.
    await waitFor('the first task to write', async () => readFileSync(log, 'utf8').includes('start 0'));
    const r = await call<ArrayView>(s.api, s.adminToken, 'POST', `/arrays/${head.id}/cancel`);
    assert.equal(r.status, 200, r.text);
    const done = await settled(head.id);
    assert.deepEqual([done.state, done.counts.cancelled], ['cancelled', 10]);
    assert.deepEqual(readFileSync(log, 'utf8').trim().split('\n'), ['start 0']);
    for (const t of await tasksOf(head.id))
      assert.equal((await waitDone(s.api, s.adminToken, t.id)).state, 'cancelled');
  });

  it('refuses malformed arrays with 400, naming the part', async () => {
    for (const [array, message] of [
      ['5-1', /the range ends before it starts/],
      ['a-b', /"a-b" is not N, N-M or N-M:S/],
      ['0-100000', /at most 100,000 tasks/],
      ['1-5%0', /%K needs a whole number of at least 1/],
      ['1%2%3', /one %K at most/],
    ] as const) {
      const r = await call<ErrorBody>(s.api, s.adminToken, 'POST', '/projects/default/jobs', {
        command: ['true'],
        array,
      });
      assert.equal(r.status, 400, array);
      assert.match(r.body.error.message, message);
    }
    const plain = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
    const notArray = await call<ErrorBody>(s.api, s.adminToken, 'GET', `/arrays/${plain.id}`);
    assert.equal(notArray.status, 404);
    assert.ok(!existsSync(join(scratch, 'never')));
    assert.equal((await getJob(s.api, s.adminToken, plain.id)).id, plain.id);
  });
});
