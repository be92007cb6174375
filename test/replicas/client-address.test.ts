/**
 * The client's address through a follower: a cancel a client sends to a follower is handed to the
 * leader, whose audit row names the client's address (signed by the follower), not the
 * follower's; a client cannot name an address of its choosing with the header the replicas use,
 * whether it sends it to the leader or through the follower.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { signAddress } from '../../src/api/client-address.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call, postFrom } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { health, replicaConfig } from './support.js';

interface Entry {
  action: string;
  subject: string;
  address: string | null;
}

describe(
  'the client address through a follower',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const dir = scratchDir('berth-client-address-');
    const config = join(dir, 'berth.yaml');
    writeFileSync(config, replicaConfig());
    let running: ServerProcess[] = [];
    let db: TestDatabase | undefined;

    after(async () => {
      for (const r of running)
        if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("the leader's audit row of a forwarded cancel names the client; a forged header names no one", async () => {
      db = await createTestDatabase();
      const leader = await spawnServer(join(dir, 'r1'), config, { database: db.url });
      const follower = await spawnServer(join(dir, 'r2'), config, { database: db.url, token: leader.token });
      running = [leader, follower];
      assert.equal((await health(leader)).role, 'leader');
      assert.equal((await health(follower)).role, 'follower');

      /** Cancels a fresh job through `via` from `from`; returns the job's id. */
      const cancelFrom = async (via: ServerProcess, from: string, headers: Record<string, string> = {}) => {
        const job = await submit(leader.api, leader.token, 'default', { command: ['sleep', '60'] });
        const r = await postFrom(from, `${via.api}/jobs/${job.id}/cancel`, via.token, headers);
        assert.equal(r.status, 200, r.text);
        return job.id;
      };
      // The header a client might forge: signed with a key of its own, or with a made-up MAC.
      const wrongKey = {
        'x-berth-client-address': signAddress('a guess', '10.6.6.6', { method: 'POST', url: '/' }),
      };
      const madeUp = { 'x-berth-client-address': '10.6.6.6;' + '0'.repeat(64) };
      const expected = new Map([
        [await cancelFrom(follower, '127.0.0.2'), '127.0.0.2'],
        [await cancelFrom(leader, '127.0.0.3', wrongKey), '127.0.0.3'],
        [await cancelFrom(leader, '127.0.0.4', madeUp), '127.0.0.4'],
        [await cancelFrom(follower, '127.0.0.5', wrongKey), '127.0.0.5'],
      ]);
      // Their processes ended before the servers are killed.
      const done = await Promise.all(
        [...expected.keys()].map((id) => waitDone(leader.api, leader.token, id)),
      );
      assert.deepEqual(new Set(done.map((j) => j.state)), new Set(['cancelled']));

      const audit = await call<Entry[]>(leader.api, leader.token, 'GET', '/audit?project=default&limit=1000');
      assert.equal(audit.status, 200, audit.text);
      const recorded = new Map(
        audit.body.filter((e) => e.action === 'job.cancel').map((e) => [Number(e.subject), e.address]),
      );
      assert.deepEqual(recorded, expected);
    });
  },
);
