/**
 * A job's env values are shown only to its submitter, admins and the job itself; every other
 * reader — the project's viewers, members and owners, project tokens — sees the names with the
 * values masked, in a job, a page of jobs, an array and a cancel's answer alike.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Principal } from '../../src/domain/user.js';
import { envFor, MASKED_ENV_VALUE } from '../../src/service/tenancy/env-visibility.js';
import { localFactoryConfig } from '../helpers/server.js';
import { assertStatus, createQueue, makeWorld, useServer, type World } from './fixtures.js';

const ENV = { WANDB_KEY: 's3cret', MODE: 'fast' };
const MASKED = { WANDB_KEY: MASKED_ENV_VALUE, MODE: MASKED_ENV_VALUE };

let world: World;
let job: number;
let array: number;

const ctx = useServer(
  async ({ api, admin }) => {
    // Held: the jobs stay queued, whoever reads them.
    await createQueue(api, admin, 'q-env', { stopPolicy: 'Hold' });
    world = await makeWorld(api, admin, 'q-env');
    await world.project('p-env');
    // Submitted by the member (mark).
    const sub = await api<{ id: number }>(world.tokens.member, 'POST', '/projects/p-env/jobs', {
      command: ['true'],
      env: ENV,
    });
    assertStatus(sub, 201);
    job = sub.body.id;
    const arr = await api<{ id: number }>(world.tokens.member, 'POST', '/projects/p-env/jobs', {
      command: ['true'],
      env: ENV,
      array: '0-1',
    });
    assertStatus(arr, 201);
    array = arr.body.id;
  },
  { config: localFactoryConfig() },
);

void describe("a job's env", () => {
  const sees = async (token: string) => {
    const { api } = ctx;
    const one = await api<{ env: unknown }>(token, 'GET', `/jobs/${job}`);
    assertStatus(one, 200);
    const list = await api<{ id: number; env: unknown }[]>(token, 'GET', '/projects/p-env/jobs');
    assertStatus(list, 200);
    const task = await api<{ env: unknown }>(token, 'GET', `/arrays/${array}/tasks/1`);
    assertStatus(task, 200);
    const head = await api<{ job: { env: unknown } }>(token, 'GET', `/arrays/${array}`);
    assertStatus(head, 200);
    const envs = [one.body.env, task.body.env, head.body.job.env, ...list.body.map((j) => j.env)];
    return envs;
  };

  test('its submitter and admins see the values', async () => {
    for (const actor of ['member', 'admin'] as const)
      for (const env of await sees(world.tokens[actor])) assert.deepEqual(env, ENV, actor);
  });

  test("the project's owner and viewers see the names, the values masked", async () => {
    for (const actor of ['owner', 'viewer'] as const) {
      for (const env of await sees(world.tokens[actor])) assert.deepEqual(env, MASKED, actor);
      const text = (await ctx.api(world.tokens[actor], 'GET', '/projects/p-env/jobs')).text;
      assert.doesNotMatch(text, /s3cret/, actor);
    }
  });

  test("a cancel's answer shows them as the job does to whoever cancels", async () => {
    const owner = await ctx.api<{ env: unknown }>(world.tokens.owner, 'POST', `/jobs/${job}/cancel`);
    assertStatus(owner, 200);
    assert.deepEqual(owner.body.env, MASKED);
  });

  test('a project token never sees the values, the job itself (its job token) does', () => {
    const record = { id: 7, createdBy: 'mark', spec: { env: ENV } };
    const as = (p: Principal) => envFor(p, record);
    assert.deepEqual(as({ kind: 'project', project: 'p-env', jobId: 7, access: 'submit' }), MASKED);
    assert.deepEqual(as({ kind: 'job', jobId: 7 }), ENV);
    assert.deepEqual(as({ kind: 'job', jobId: 8 }), MASKED);
  });
});
