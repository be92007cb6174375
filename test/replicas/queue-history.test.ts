/**
 * The queue history on a follower replica: it samples what `GET /cluster-queues/{name}` shows
 * there — the leader's published figures — so its charts follow the jobs the leader admits,
 * admissions included.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { QueueHistoryView } from '../../src/domain/queue-history.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { health, replicaConfig } from './support.js';
import { scratchDir } from '../helpers/scratch.js';

describe(
  'the queue history on replicas',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const dir = scratchDir('berth-replicas-history-');
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, replicaConfig(['queueHistory:', '  sampleSeconds: 0.2', '  keep: 10m']));
    const running: ServerProcess[] = [];
    let db: TestDatabase | undefined;
    after(async () => {
      for (const r of running)
        if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("a follower records the leader's figures and admissions", async () => {
      db = await createTestDatabase();
      const leader = await spawnServer(join(dir, 'one'), config, { database: db.url });
      running.push(leader);
      const follower = await spawnServer(join(dir, 'two'), config, { database: db.url, token: leader.token });
      running.push(follower);
      assert.equal((await health(follower)).role, 'follower');
      const history = async () => {
        const res = await call<QueueHistoryView>(
          follower.api,
          follower.token,
          'GET',
          '/cluster-queues/default/history',
        );
        assert.equal(res.status, 200, res.text);
        return res.body;
      };
      await waitFor('samples on the follower', async () => (await history()).samples.length > 0);

      const gate = join(dir, 'gate');
      const job = await submit(follower.api, follower.token, 'default', {
        script: `while [ ! -e ${gate} ]; do sleep 0.05; done`,
        requests: { cpu: '1' },
      });
      const busy = await waitFor('the running job in the follower’s samples', async () => {
        const h = await history();
        return h.samples.at(-1)?.used.cpu === 1 && h;
      });
      assert.equal(busy.samples.at(-1)?.admitted, 1);
      await waitFor('its admission counted', async () => {
        const h = await history();
        return h.samples.reduce((n, s) => n + s.admissions, 0) === 1;
      });
      writeFileSync(gate, '');
      await waitDone(follower.api, follower.token, job.id);
      await waitFor(
        'the queue idle again on the follower',
        async () => (await history()).samples.at(-1)?.admitted === 0,
      );
      const h = await history();
      assert.equal(
        h.samples.reduce((n, s) => n + s.admissions, 0),
        1,
        'one admission in all',
      );
    });
  },
);
