/**
 * Backfill at a factory (controller/pool.ts, docs/QUEUEING.md "At the factories and wells"), live
 * on a local factory of 3 workers: while a gang of 3 waits for the worker a running job holds, a
 * short job whose timeout ends before that job's does starts ahead of it, and says so; a job
 * without a timeout, which could delay the gang, waits behind it.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { events, getJob, submit, waitDone } from '../helpers/jobs.js';
import { scratchDir } from '../helpers/scratch.js';
import { localFactoryConfig, useTestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

describe('a gang waiting for workers', () => {
  const server = useTestServer({ config: localFactoryConfig(3) });
  const dir = scratchDir('berth-pool-backfill-');
  after(() => rmSync(dir, { recursive: true, force: true }));
  const gated = (name: string) => `while [ ! -e ${join(dir, name)} ]; do sleep 0.05; done`;
  const state = async (id: number) => (await getJob(server().api, server().adminToken, id)).state;

  it('lets a job that ends before its reserved start go ahead, and keeps one that could delay it waiting', async () => {
    const s = server();
    const holder = await submit(s.api, s.adminToken, 'default', {
      script: gated('holder'),
      timeoutSeconds: 600,
    });
    await waitFor('the holder to run', async () => (await state(holder.id)) === 'running');
    const gang = await submit(s.api, s.adminToken, 'default', { script: 'true', workers: 3 });
    await waitFor('the gang to wait for workers', async () =>
      /waiting for 3 workers at once from factory local/.test(
        (await getJob(s.api, s.adminToken, gang.id)).reason,
      ),
    );
    const untimed = await submit(s.api, s.adminToken, 'default', { script: gated('untimed') });
    const short = await submit(s.api, s.adminToken, 'default', {
      script: gated('short'),
      timeoutSeconds: 30,
    });
    await waitFor('the short job to run', async () => (await state(short.id)) === 'running');
    assert.notEqual(
      await state(untimed.id),
      'running',
      'without a timeout it could delay the gang: it waits',
    );
    assert.notEqual(await state(gang.id), 'running');
    const said = (await events(s.api, s.adminToken, short.id)).find((e) => e.type === 'worker-creating');
    assert.match(said?.message ?? '', new RegExp(`ahead of job ${gang.id}, which waits for 3 workers`));

    for (const name of ['short', 'holder', 'untimed']) writeFileSync(join(dir, name), '');
    for (const j of [short, holder, gang, untimed])
      assert.equal((await waitDone(s.api, s.adminToken, j.id)).state, 'succeeded');
    const started = async (id: number) =>
      Date.parse((await events(s.api, s.adminToken, id)).find((e) => e.type === 'started')!.at);
    assert.ok(
      (await started(gang.id)) <= (await started(untimed.id)),
      'the gang started before the job without a timeout',
    );
  });
});
