/**
 * PostgreSQL restarted under load (a server of the test's own, so that the shared one is not
 * disturbed): two replicas carry on once it is back — every job ends, none runs twice, nothing is
 * left behind — and a client that retries with its idempotency keys loses no submission.
 *
 * PostgreSQL pass only: replicas need PostgreSQL whichever store the rest of the suite runs on.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { startPostgresCluster, type PostgresCluster } from '../helpers/postgres-cluster.js';
import { killHard, spawnServer, type ServerProcess } from '../helpers/server-process.js';
import { TEST_STORE } from '../helpers/store.js';
import { waitFor } from '../helpers/wait.js';
import { health, processesUnder, replicaConfig, submitThrough } from './support.js';
import { scratchDir, sharedFile } from '../helpers/scratch.js';

const JOBS = 200;

describe(
  'PostgreSQL restarted under load',
  { skip: TEST_STORE !== 'postgres' && 'runs in the PostgreSQL pass' },
  () => {
    const dir = scratchDir('berth-pg-restart-');
    const marks = join(dir, 'marks');
    let cluster: PostgresCluster;
    const replicas: ServerProcess[] = [];

    before(async () => {
      sharedFile(marks);
      writeFileSync(join(dir, 'berth.yaml'), replicaConfig());
      cluster = await startPostgresCluster();
      const first = await spawnServer(join(dir, 'a'), join(dir, 'berth.yaml'), { database: cluster.url });
      replicas.push(first);
      replicas.push(
        await spawnServer(join(dir, 'b'), join(dir, 'berth.yaml'), {
          database: cluster.url,
          token: first.token,
        }),
      );
    });

    after(async () => {
      for (const r of replicas)
        if (r.child.exitCode === null && r.child.signalCode === null) await killHard(r);
      cluster?.stop();
      cluster?.remove();
      rmSync(dir, { recursive: true, force: true });
    });

    it('the installation recovers, nothing lost, nothing run twice, nothing left', async () => {
      const submitting = submitThrough(replicas, JOBS, 8, () => ({
        script: `echo $BERTH_JOB_ID >> ${marks}; sleep 0.05`,
      }));
      await waitFor('a quarter of the submissions', () => submitting.sent() >= JOBS / 4, 60_000);
      cluster.restart();
      await submitting.done;

      const db = new pg.Client({ connectionString: cluster.url });
      await db.connect();
      try {
        const q = async (text: string) => Number(((await db.query(text)).rows[0] as { n: string }).n);
        await waitFor(
          'every job to end and be cleaned up',
          async () => (await q('SELECT count(*) AS n FROM jobs WHERE cleaned_up = 0')) === 0,
          120_000,
        );
        assert.equal(await q('SELECT count(*) AS n FROM jobs'), JOBS, 'every submission, once');
        assert.equal(
          await q("SELECT count(*) AS n FROM workers WHERE state NOT IN ('destroyed', 'failed')"),
          0,
        );
        const failed = (await db.query("SELECT reason FROM jobs WHERE state <> 'succeeded'")).rows as {
          reason: string;
        }[];
        for (const f of failed) assert.match(f.reason, /server restarted|worker lost/);
        console.log(
          `# ${JOBS - failed.length} succeeded, ${failed.length} failed with the outage; ${submitting.retries()} submissions answered 503 (or lost) and sent again`,
        );
      } finally {
        await db.end();
      }
      for (const r of replicas)
        assert.equal(
          r.child.exitCode,
          null,
          `a replica survives the outage; its output:\n${r.output().slice(-3000)}`,
        );
      const runs = readFileSync(marks, 'utf8').trim().split('\n');
      assert.equal(new Set(runs).size, runs.length, 'no job ran twice');
      const leaders = (await Promise.all(replicas.map((r) => health(r)))).filter((h) => h.role === 'leader');
      assert.equal(leaders.length, 1, 'one replica leads');
      for (const name of ['a', 'b']) assert.deepEqual(processesUnder(join(dir, name)), []);
    });
  },
);
