/**
 * insertJobs (store/queries/jobs.ts) builds each new job's record from its input rather than
 * reading the row back: the record must be exactly what reading the row gives, on the suite's
 * store — a column default changed in a migration and not here would fail this — and a repeated
 * idempotency key leaves the job out, in its place.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobSpec } from '../../src/domain/job.js';
import { findJob, insertJobs, type NewJob } from '../../src/store/queries/jobs.js';
import { storeOf } from '../helpers/db.js';
import { useTestServer } from '../helpers/server.js';

const server = useTestServer();

const spec: JobSpec = {
  command: ['sh', '-c', 'echo "it\'s"'],
  env: { A: '1' },
  timeoutSeconds: 30,
  requests: { cpu: '500m' },
  resources: [],
  dependsOn: [],
};
const job = (name: string, idempotencyKey: string | null): NewJob => ({
  project: 'default',
  name,
  clusterQueue: 'default',
  target: 'local',
  priority: 3,
  spec,
  idempotencyKey,
  createdBy: 'admin',
  reason: 'seeded',
});

describe('insertJobs', () => {
  it("returns each job's record exactly as it reads back, and leaves out a repeated idempotency key", async () => {
    const { db } = storeOf(server());
    const now = Date.now();
    const records = await insertJobs(
      db,
      [job('a', null), job('b', 'k1'), job('c', 'k1'), job('d', 'k2')],
      now,
    );
    assert.equal(records.length, 4);
    assert.equal(records[2], undefined, 'the second use of k1 is left out');
    for (const r of [records[0], records[1], records[3]]) {
      assert.ok(r);
      assert.deepEqual(await findJob(db, r.id), r);
    }
    assert.deepEqual(
      records.map((r) => r?.name),
      ['a', 'b', undefined, 'd'],
    );
    const again = await insertJobs(db, [job('e', 'k2')], now);
    assert.deepEqual(again, [undefined]);
  });
});
