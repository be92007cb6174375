/**
 * Retention end to end, on either store: the sweep, run with a clock the test sets, removes ended
 * jobs older than `retention.jobs` with their events, attempts, logs and artifacts, audit rows
 * older than `retention.audit` and the ledger's allocations older than `retention.ledger`; recent
 * and unfinished jobs stay; GET /metrics counts what went; usage reports read the same before
 * and after; a removed job answers 404 saying when it ended and why it is gone; `forever` keeps
 * everything; a sweep told the server is stopping ends between batches.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sweepRetention } from '../../src/service/upkeep/retention.js';
import { FileLogStore } from '../../src/store/log-store.js';
import { getJob, submit, waitDone, type JobView } from '../helpers/jobs.js';
import { call, localFactoryConfig, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

const HOUR = 3_600_000;
const config = [localFactoryConfig(4), 'retention:', '  jobs: 1h', '  audit: 1h', '  ledger: 1h'].join('\n');

let s: TestServer;
before(async () => {
  s = await startTestServer({ config });
});
after(() => s.close());

const db = () => s.server.context.store.db;

/** Rows of `table` that belong to jobs `ids`. */
async function rowsOf(
  table: 'events' | 'job_attempts' | 'job_logs' | 'usage_ledger' | 'job_artifacts',
  ids: number[],
): Promise<number> {
  const rows = await db().selectFrom(table).select('job_id').where('job_id', 'in', ids).execute();
  return rows.length;
}

/** Whether job `id`'s log is kept: its file on SQLite, its rows on PostgreSQL. */
async function logKept(id: number): Promise<boolean> {
  const logs = s.server.context.runtime!.logs;
  if (logs instanceof FileLogStore) return existsSync(logs.path(id));
  return (await rowsOf('job_logs', [id])) > 0;
}

/** `berth_retention_removed_total` of GET /metrics, by kind. */
async function removedCounters(): Promise<{ jobs: number; audit: number; ledger: number }> {
  const { text } = await call(s.api, s.adminToken, 'GET', '/metrics');
  const of = (kind: string) => {
    const m = new RegExp(`^berth_retention_removed_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text);
    assert.ok(m, `no berth_retention_removed_total{kind="${kind}"} in GET /metrics`);
    return Number(m[1]);
  };
  return { jobs: of('jobs'), audit: of('audit'), ledger: of('ledger') };
}

const ms = (iso: string | null): number => Date.parse(iso!);
const usage = async () => (await call(s.api, s.adminToken, 'GET', '/usage?since=2d&by=user')).body;

describe('the retention sweep', () => {
  it('removes old ended jobs with all of theirs, keeps the rest, and leaves usage reports as they were', async () => {
    // Old jobs: one that printed and kept an artifact, one that failed after a retry.
    const printed = await submit(s.api, s.adminToken, 'default', {
      script: 'echo hello; echo kept > out.txt',
      artifacts: ['out.txt'],
    });
    const retried = await submit(s.api, s.adminToken, 'default', {
      script: 'echo try; exit 3',
      retries: 1,
    });
    const old: JobView[] = [];
    for (const j of [printed, retried]) old.push(await waitDone(s.api, s.adminToken, j.id));
    const oldIds = old.map((j) => j.id);
    const cutoff = Math.max(...old.map((j) => ms(j.finishedAt))) + 1;
    await waitFor('the clock to pass the cut-off', () => Date.now() > cutoff);

    // A job still running, and one that ended after the cut-off.
    const running = await submit(s.api, s.adminToken, 'default', { command: ['sleep', '60'] });
    const recent = await waitDone(
      s.api,
      s.adminToken,
      (await submit(s.api, s.adminToken, 'default', { script: 'echo recent' })).id,
    );
    await waitFor(
      'the long job to run',
      async () => (await getJob(s.api, s.adminToken, running.id)).state === 'running',
    );
    assert.ok(ms(recent.finishedAt) >= cutoff);

    const artifacts = join(s.dataDir, 'artifacts', String(printed.id));
    assert.equal(existsSync(artifacts), true, 'the artifact was kept');
    assert.equal(await logKept(printed.id), true, 'the log was kept');
    assert.ok((await rowsOf('job_attempts', [retried.id])) > 0, 'the retried job has an ended attempt');
    assert.ok((await rowsOf('usage_ledger', oldIds)) >= 3, 'the ledger has their allocations');
    const report = await usage();

    const ctx = s.server.context;
    const forever = await sweepRetention(
      ctx,
      { jobs: null, audit: null, ledger: null },
      { now: cutoff + 100 * HOUR },
    );
    assert.deepEqual(forever, { jobs: 0, audit: 0, ledger: 0 }, 'forever keeps everything');
    assert.equal((await getJob(s.api, s.adminToken, printed.id)).id, printed.id);
    // A server stopping ends a sweep between two batches: one stopped before its first removes nothing.
    const stopped = await sweepRetention(ctx, s.server.config.retention, {
      now: cutoff + HOUR,
      stopped: () => true,
    });
    assert.deepEqual(stopped, { jobs: 0, audit: 0, ledger: 0 });
    assert.equal((await getJob(s.api, s.adminToken, printed.id)).id, printed.id);

    const counted = await removedCounters();
    const swept = await sweepRetention(ctx, s.server.config.retention, { now: cutoff + HOUR });
    assert.equal(swept.jobs, 2);
    assert.ok(swept.audit > 0 && swept.ledger >= 3, JSON.stringify(swept));
    const after = await removedCounters();
    assert.deepEqual(
      {
        jobs: after.jobs - counted.jobs,
        audit: after.audit - counted.audit,
        ledger: after.ledger - counted.ledger,
      },
      swept,
      'GET /metrics counts what the sweep removed',
    );

    for (const id of oldIds) {
      const r = await call<{ error: { message: string } }>(s.api, s.adminToken, 'GET', `/jobs/${id}`);
      assert.equal(r.status, 404);
      const day = old.find((j) => j.id === id)!.finishedAt!.slice(0, 10);
      assert.equal(r.body.error.message, `job ${id} ended on ${day} and was removed after 1 hour`);
      assert.equal(await logKept(id), false, `job ${id}'s log is gone`);
    }
    for (const table of ['events', 'job_attempts', 'job_logs', 'usage_ledger', 'job_artifacts'] as const)
      assert.equal(await rowsOf(table, oldIds), 0, `no ${table} rows of the removed jobs`);
    assert.equal(existsSync(artifacts), false, 'the artifact files are gone');

    // What is recent or unfinished stays, with its log, events and allocations.
    assert.equal((await getJob(s.api, s.adminToken, recent.id)).state, 'succeeded');
    assert.equal(await logKept(recent.id), true);
    assert.ok((await rowsOf('events', [recent.id, running.id])) > 0);
    assert.equal(await rowsOf('usage_ledger', [recent.id]), 1);
    assert.equal((await getJob(s.api, s.adminToken, running.id)).state, 'running');
    const audit = await db().selectFrom('audit_log').select('at').execute();
    assert.ok(audit.length > 0 && audit.every((r) => Number(r.at) >= cutoff), 'only recent audit rows stay');

    assert.deepEqual(await usage(), report, 'the usage report reads the rollups, which stay');
    const unknown = await call<{ error: { message: string } }>(s.api, s.adminToken, 'GET', '/jobs/999999');
    assert.equal(unknown.body.error.message, 'job 999999 not found');

    // Once the long job has ended and is old too, its id joins its neighbours' range: one row.
    await call(s.api, s.adminToken, 'POST', `/jobs/${running.id}/cancel`);
    const cancelled = await waitDone(s.api, s.adminToken, running.id);
    const later = await sweepRetention(ctx, s.server.config.retention, {
      now: ms(cancelled.finishedAt) + 2 * HOUR,
    });
    assert.equal(later.jobs, 2, 'the cancelled job and the recent one');
    const ranges = await db().selectFrom('removed_jobs').selectAll().execute();
    assert.equal(ranges.length, 1, JSON.stringify(ranges));
    assert.deepEqual([Number(ranges[0]!.first_id), Number(ranges[0]!.last_id)], [printed.id, recent.id]);
    const r = await call<{ error: { message: string } }>(s.api, s.adminToken, 'GET', `/jobs/${running.id}`);
    assert.match(
      r.body.error.message,
      new RegExp(`^job ${running.id} ended (on|between) .* removed after 1 hour$`),
    );
  });
});
