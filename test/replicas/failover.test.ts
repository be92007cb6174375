/**
 * Three replicas on one PostgreSQL, real processes, 1,000 real jobs (a tenth of them holding a
 * managed resource made by an exec well): the leader is killed with kill -9 while they flow.
 * Another replica leads within the lease plus one renewal; every job ends, none runs twice, and
 * no worker, process or resource instance is left.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { call } from '../helpers/server.js';
import { createTestDatabase, TEST_STORE, type TestDatabase } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import {
  health,
  processesUnder,
  replicaConfig,
  submitThrough,
  LEASE_SECONDS,
  RENEW_SECONDS,
} from './support.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

const JOBS = 1000;

describe(
  'kill -9 of the leader while 1,000 jobs flow',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const dir = scratchDir('berth-failover-');
    const marks = join(dir, 'marks');
    const alive = join(dir, 'alive');
    let db: TestDatabase;
    const replicas: ServerProcess[] = [];

    before(async () => {
      mkdirSync(alive);
      sharedFile(marks);
      const script = (name: string, body: string) => {
        writeFileSync(join(dir, name), `#!/bin/sh\nset -e\n${body}\n`);
        chmodSync(join(dir, name), 0o755);
      };
      script('create.sh', `touch ${alive}/$BERTH_RESOURCE_ID\necho '{"id": "'$BERTH_RESOURCE_ID'"}'`);
      script('destroy.sh', `rm -f ${alive}/$BERTH_RESOURCE_ID`);
      writeFileSync(
        join(dir, 'berth.yaml'),
        replicaConfig([
          'resources:',
          `  lic: { kind: exec, capacity: 2, create: create.sh, destroy: destroy.sh }`,
        ]),
      );
      db = await createTestDatabase();
      const first = await spawnServer(join(dir, 'a'), join(dir, 'berth.yaml'), { database: db.url });
      replicas.push(first);
      for (const name of ['b', 'c'])
        replicas.push(
          await spawnServer(join(dir, name), join(dir, 'berth.yaml'), {
            database: db.url,
            token: first.token,
          }),
        );
    });

    after(async () => {
      for (const r of replicas)
        if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('hands over within the lease plus one renewal; no job lost, run twice, or leaked', async () => {
      const [a, b, c] = replicas as [ServerProcess, ServerProcess, ServerProcess];
      assert.equal((await health(a)).role, 'leader', 'the first replica leads');
      for (const f of [b, c]) assert.equal((await health(f)).role, 'follower');
      const term = (await health(a)).term;

      // Submitted through every live replica, 16 at a time; a submission whose replica died is sent
      // again through another with the same idempotency key, as a client would.
      const submitting = submitThrough(replicas, JOBS, 16, (i) => ({
        script: `echo $BERTH_JOB_ID >> ${marks}`,
        ...(i % 10 === 0 ? { resources: ['lic'] } : {}),
      }));
      const done = async (via: ServerProcess) => {
        const p = await call<{ jobCounts: Record<string, number> }>(
          via.api,
          via.token,
          'GET',
          '/projects/default',
        );
        const n = p.body.jobCounts;
        return (n.succeeded ?? 0) + (n.failed ?? 0) + (n.cancelled ?? 0);
      };
      await waitFor('a third of the jobs to end', async () => (await done(b)) >= JOBS / 3, 120_000);

      // Two long jobs are surely running when it dies: they must fail, not run again. A higher
      // priority puts them ahead of the hundreds still queued, so that they run while jobs flow
      // however fast this machine works through the queue.
      const long: number[] = [];
      for (let i = 0; i < 2; i++)
        long.push(
          (
            await call<{ id: number }>(b.api, b.token, 'POST', '/projects/default/jobs', {
              script: `echo long-$BERTH_JOB_ID >> ${marks}; sleep 300`,
              priority: 100,
            })
          ).body.id,
        );
      await waitFor(
        'the long jobs to run',
        async () => {
          for (const id of long)
            if (
              (await call<{ state: string }>(b.api, b.token, 'GET', `/jobs/${id}`)).body.state !== 'running'
            )
              return false;
          return true;
        },
        60_000,
      );
      const killedAt = Date.now();
      await killHard(a);
      const leader = await waitFor(
        'another replica to lead',
        async () => {
          for (const r of [b, c]) {
            const h = await health(r).catch(() => undefined);
            if (h?.role === 'leader') return { r, h };
          }
          return undefined;
        },
        60_000,
      );
      const took = (Date.now() - killedAt) / 1000;
      assert.ok(leader.h.term > term, `a new term: ${leader.h.term} after ${term}`);
      assert.ok(took <= LEASE_SECONDS + RENEW_SECONDS + 2, `a new leader after ${took.toFixed(1)} s`);
      console.log(
        `# new leader in term ${leader.h.term} after ${took.toFixed(1)} s (lease ${LEASE_SECONDS} s, renew ${RENEW_SECONDS} s)`,
      );

      // Followers that were submitting through the killed one carry on through the others.
      replicas.splice(0, 1);
      await submitting.done;
      await waitFor('every job to end', async () => (await done(leader.r)) >= JOBS + long.length, 240_000);

      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const q = async (text: string) => Number(((await admin.query(text)).rows[0] as { n: string }).n);
        await waitFor(
          'every job to be cleaned up',
          async () => (await q('SELECT count(*) AS n FROM jobs WHERE cleaned_up = 0')) === 0,
          60_000,
        );
        assert.equal(
          await q('SELECT count(*) AS n FROM jobs'),
          JOBS + long.length,
          'no job lost, none doubled',
        );
        for (const id of long) {
          const r = (await admin.query('SELECT state, reason FROM jobs WHERE id = $1', [id])).rows[0] as {
            state: string;
            reason: string;
          };
          assert.deepEqual(
            [r.state, /server restarted/.test(r.reason)],
            ['failed', true],
            `long job ${id}: ${r.reason}`,
          );
        }
        assert.equal(
          await q("SELECT count(*) AS n FROM workers WHERE state <> 'destroyed' AND state <> 'failed'"),
          0,
          'no worker left',
        );
        assert.equal(
          await q(
            "SELECT count(*) AS n FROM resource_instances WHERE state <> 'destroyed' AND state <> 'failed'",
          ),
          0,
          'no instance left on record',
        );
        const failed = (await admin.query("SELECT reason FROM jobs WHERE state <> 'succeeded'")).rows as {
          reason: string;
        }[];
        for (const f of failed)
          assert.match(
            f.reason,
            /server restarted|worker lost/,
            'only jobs that ran on the killed leader fail',
          );
        console.log(
          `# ${JOBS + long.length - failed.length} jobs succeeded, ${failed.length} failed with the killed leader`,
        );
      } finally {
        await admin.end();
      }
      const runs = readFileSync(marks, 'utf8').trim().split('\n');
      assert.equal(new Set(runs).size, runs.length, 'no job ran twice');
      assert.ok(runs.length >= JOBS - 50, `${runs.length} jobs ran`);
      assert.deepEqual(readdirSync(alive), [], 'no resource instance left alive');
      for (const name of ['a', 'b', 'c'])
        assert.deepEqual(processesUnder(join(dir, name)), [], `no process of replica ${name}`);
    });
  },
);
