/**
 * `GET /scheduler/forecast-input` shows a member what the pending list would: the jobs of other
 * projects are counted, but neither their project's name nor their ids are given; admins see all.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ForecastInput } from '../../src/controller/port.js';
import { submit } from '../helpers/jobs.js';
import { localFactoryConfig } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { assertStatus, createProject, createQueue, createUser, useServer } from './fixtures.js';

let mark: string;
const mine: number[] = [];
const theirs: number[] = [];

const ctx = useServer(
  async ({ api, admin, server }) => {
    // Held: its jobs stay pending, in the forecast's input.
    await createQueue(api, admin, 'q-held', { stopPolicy: 'Hold' });
    mark = (await createUser(api, admin, 'mark')).token;
    await createProject(api, admin, 'p-mine', 'q-held', { mark: 'member' });
    await createProject(api, admin, 'p-theirs', 'q-held');
    for (let i = 0; i < 2; i++) {
      mine.push((await submit(server.api, admin, 'p-mine', { command: ['true'] })).id);
      theirs.push((await submit(server.api, admin, 'p-theirs', { command: ['true'] })).id);
    }
  },
  { config: localFactoryConfig() },
);

const read = async (token: string) => {
  const res = await ctx.api<ForecastInput>(token, 'GET', '/scheduler/forecast-input');
  assertStatus(res, 200);
  return res;
};
const pendingOf = (input: ForecastInput) => input.pending.map((p) => p.workload);

void describe('forecast input', () => {
  test("a member sees its own jobs by id and project, others' counted but anonymous", async () => {
    const res = await waitFor('the four jobs pending in the forecast input', async () => {
      const r = await read(mark);
      return pendingOf(r.body).length === 4 && r;
    });
    const workloads = pendingOf(res.body);
    const own = workloads.filter((w) => w.project === 'p-mine');
    assert.deepEqual(own.map((w) => w.id).sort(), [...mine].sort());
    const others = workloads.filter((w) => w.project !== 'p-mine');
    assert.equal(others.length, 2, 'counted: their place matters to the jobs behind them');
    assert.deepEqual(
      others.map((w) => w.project),
      ['~1', '~1'],
    );
    for (const w of others) assert.ok(w.id < 0, `a stand-in id, not job ${w.id}`);
    assert.equal(new Set(others.map((w) => w.id)).size, 2, 'still told apart');
    assert.doesNotMatch(res.text, /p-theirs/);
  });

  test('an admin sees every job by id and project', async () => {
    const workloads = pendingOf((await read(ctx.admin)).body);
    assert.deepEqual(
      workloads
        .filter((w) => w.project === 'p-theirs')
        .map((w) => w.id)
        .sort(),
      [...theirs].sort(),
    );
  });
});
