/**
 * The retention sweep among requests, on either store: a submission made while it removes
 * thousands of jobs is answered while the sweep goes on (each batch is a short transaction, and
 * the sweep yields between them), and the sweep removes their files a few at a time. A thousand
 * removals started at once held the event loop 40–75 ms (bench/history.ts at 200,000 jobs), and
 * every request waited behind them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sweepRetention } from '../../src/service/upkeep/retention.js';
import { submit } from '../helpers/jobs.js';
import { localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';

const HOUR = 3_600_000;
const JOBS = 3000;
/** What service/upkeep/retention.ts allows of artifact removals under way at once. */
const ARTIFACT_REMOVALS = 8;

let s: TestServer;
before(async () => {
  // Kept forever by the server's own sweeps: the test runs the only one, with a retention of 1 hour.
  s = await startTestServer({ config: [localFactoryConfig(2), 'retention: { jobs: forever }'].join('\n') });
});
after(() => s.close());

/** JOBS ended jobs, written straight into the store: ended two hours before `now`, cleaned up. */
async function oldJobs(now: number): Promise<number[]> {
  const ended = now - 2 * HOUR;
  const ids: number[] = [];
  for (let k = 0; k < JOBS; k += 200) {
    const rows = Array.from({ length: Math.min(200, JOBS - k) }, (_, i) => ({
      project: 'default',
      name: `old-${k + i}`,
      state: 'succeeded',
      reason: 'exited with code 0',
      cluster_queue: 'default',
      target: 'local',
      priority: 0,
      spec: JSON.stringify({ command: ['true'], env: {}, requests: {}, resources: [], dependsOn: [] }),
      idempotency_key: null,
      created_by: 'admin',
      exit_code: 0,
      borrowed: null,
      cancel_requested: 0,
      cleaned_up: 1,
      attempts: 1,
      retry_at: null,
      array_id: null,
      array_index: null,
      queued_at: null,
      created_at: ended - 1000,
      admitted_at: ended - 900,
      started_at: ended - 800,
      finished_at: ended,
    }));
    const made = await s.server.context.store.db.insertInto('jobs').values(rows).returning('id').execute();
    ids.push(...made.map((r) => Number(r.id)));
  }
  return ids;
}

describe('the retention sweep among requests', () => {
  it('answers a submission while it runs, and removes files a few at a time', async () => {
    const now = Date.now();
    const ids = await oldJobs(now);
    const rt = s.server.context.runtime!;
    const files = rt.artifacts.files;
    const remove = files.remove.bind(files);
    let underWay = 0;
    let most = 0;
    let started!: () => void;
    const first = new Promise<void>((resolve) => (started = resolve));
    files.remove = async (id: number) => {
      most = Math.max(most, ++underWay);
      started();
      try {
        await remove(id);
      } finally {
        underWay--;
      }
    };
    try {
      let ended = false;
      const sweep = sweepRetention(
        s.server.context,
        { jobs: 3600, audit: null, ledger: null },
        { now },
      ).finally(() => {
        ended = true;
      });
      await first;
      const job = await submit(s.api, s.adminToken, 'default', { command: ['true'] });
      assert.ok(job.id > ids.at(-1)!);
      assert.equal(ended, false, 'the submission was answered before the sweep ended');
      const report = await sweep;
      assert.equal(report.jobs, JOBS);
      assert.ok(most <= ARTIFACT_REMOVALS, `${most} artifact removals at once`);
    } finally {
      files.remove = remove;
    }
  });
});
