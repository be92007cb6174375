/**
 * `berth usage` against a real server that ran real jobs, as a user sees it: the table with its
 * period, JSON, CSV, grouping by user, and the refusals (one line, non-zero exit).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsageReport } from '../../src/domain/usage.js';
import { localFactoryConfig } from '../helpers/server.js';
import { fails, ok, parseJson, row, useCliServer } from './cli.js';

let carol = '';

const ctx = useCliServer(
  async ({ admin, request }) => {
    const run = async (...args: string[]) => {
      const r = await admin(['submit', '--wait', '--request', 'cpu=500m,memory=64Mi', '--', ...args]);
      assert.ok(r.code === 0 || r.code === 3, `${r.code} ${r.stderr}`);
    };
    await run('sleep', '0.2');
    await run('sh', '-c', 'exit 3');
    carol = (await request<{ token: string }>('POST', '/users', { name: 'carol' })).token;
  },
  { config: localFactoryConfig() },
);
const { admin: cli } = ctx;

/** The table below the period's line. */
const tableOf = (out: string): string => out.split('\n').slice(1).join('\n');

describe('berth usage', () => {
  it('prints the period and a line per project: jobs, allocations, waits, hours and resources', async () => {
    const out = ok(await cli(['usage', '--since', '1d']));
    assert.match(
      out.split('\n')[0]!,
      /^usage from \d{4}-\d\d-\d\dT\d\d:00:00\.000Z to \d{4}-\d\d-\d\dT\d\d:00:00\.000Z \(whole hours\), by project$/,
    );
    const line = row(tableOf(out), 'PROJECT', 'default');
    assert.equal(line['JOBS OK/FAILED/CANCELLED'], '1/1/0');
    assert.equal(line.ALLOCS, '2');
    assert.match(line['WAIT MEAN/MAX']!, /^[\d.]+s\/[\d.]+s$/);
    assert.match(line.HOURS!, /^(<0\.001|[\d.]+)$/);
    assert.match(line['CPU·H']!, /^(<0\.001|[\d.]+)$/);
    assert.match(line.MEMORY!, /^[\d.]+ (B|KiB|MiB|GiB)·h$/);
  });

  it('groups by user, and says so when nothing ended in the period', async () => {
    const out = ok(await cli(['usage', '--by', 'user']));
    assert.match(out, /, by user\n/);
    assert.equal(row(tableOf(out), 'USER', 'admin').ALLOCS, '2');
    const empty = ok(
      await cli(['usage', '--since', '2020-01-01T00:00:00Z', '--until', '2020-01-02T00:00:00Z']),
    );
    assert.equal(
      empty,
      'usage from 2020-01-01T00:00:00.000Z to 2020-01-02T00:00:00.000Z (whole hours), by project\nnothing ended in this period\n',
    );
  });

  it('prints the API answer with -o json, and plain numbers with -o csv', async () => {
    const r = parseJson<UsageReport>(await cli(['usage', '--project', 'default', '-o', 'json']));
    assert.deepEqual(r.resources, ['cpu', 'memory']);
    assert.deepEqual(
      r.rows.map((x) => [x.key, x.jobs, x.allocations]),
      [['default', { succeeded: 1, failed: 1, cancelled: 0 }, 2]],
    );
    assert.ok(r.rows[0]!.resourceHours.cpu! > 0);

    const csv = ok(await cli(['usage', '--by', 'queue', '-o', 'csv']))
      .trimEnd()
      .split('\n');
    assert.equal(
      csv[0],
      'queue,succeeded,failed,cancelled,allocations,requeued,retried,wait_mean_seconds,wait_max_seconds,allocation_hours,cpu_core_hours,memory_byte_hours',
    );
    assert.equal(csv.length, 2);
    const cells = csv[1]!.split(',');
    assert.deepEqual(cells.slice(0, 7), ['default', '1', '1', '0', '2', '0', '0']);
    assert.ok(
      cells.slice(7).every((c) => Number.isFinite(Number(c))),
      csv[1],
    );
    const json = parseJson<UsageReport>(await cli(['usage', '--by', 'queue', '-o', 'json']));
    assert.equal(Number(cells[10]), json.rows[0]!.resourceHours.cpu);
  });

  it('refuses bad flags, and a project the user is not in, with one line', async () => {
    fails(
      await cli(['usage', '--since', 'soon']),
      2,
      /^berth: option '--since <time>' argument 'soon' is invalid\. "soon" is not a time: write an ISO 8601 time/,
    );
    fails(await cli(['usage', '--by', 'team']), 2, /^berth: option '--by <key>' argument 'team' is invalid/);
    fails(await cli(['usage', '-o', 'yaml']), 2, /argument 'yaml' is invalid/);
    fails(
      await cli(['usage', '--since', '1h', '--until', '2h']),
      1,
      /^berth: since \(.*\) must be before until/,
    );
    fails(
      await ctx.as(carol)(['usage', '--project', 'default']),
      1,
      /^berth: project "default" not found\n$/,
    );
    assert.match(ok(await ctx.as(carol)(['usage'])), /\nnothing ended in this period\n$/);
  });
});
