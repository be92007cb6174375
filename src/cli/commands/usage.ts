/** `berth usage`: resource·hours, jobs by outcome and waits, per project, user or queue. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { formatBytes } from '../../domain/artifact.js';
import { BerthError } from '../../domain/errors.js';
import {
  isByteResource,
  USAGE_GROUPINGS,
  usageTime,
  type UsageGrouping,
  type UsageReport,
  type UsageRow,
} from '../../domain/usage.js';
import { formatSpan } from '../duration.js';
import { outputWidth, table } from '../output.js';
import { examples, openSession } from '../session.js';

const FORMATS = ['table', 'json', 'csv'] as const;

interface UsageFlags {
  output: (typeof FORMATS)[number];
  project?: string;
  since?: string;
  until?: string;
  by: UsageGrouping;
}

/** `7d` or an ISO 8601 time, checked here and passed on as written (the server's clock counts back). */
function time(field: string) {
  return (text: string): string => {
    try {
      usageTime(field, text, Date.now());
    } catch (e) {
      if (e instanceof BerthError) throw new InvalidArgumentError(e.message.replace(/^[a-z]+: /, ''));
      throw e;
    }
    return text;
  };
}

/** Three significant digits, no exponent: 6.5, 0.0123, 1234. */
function amount(n: number): string {
  if (n === 0) return '0';
  if (Math.abs(n) < 0.001) return '<0.001';
  if (Math.abs(n) >= 100) return String(Math.round(n));
  return String(Number(n.toPrecision(3)));
}

/** A wait: `1.5s` under a minute, else `2m5s`. */
const seconds = (s: number): string => (s < 60 ? `${Number(s.toFixed(1))}s` : formatSpan(s * 1000, 2));

/** A resource's column: its header, and how a row's figure reads. */
function resourceColumn(name: string): [string, (hours: number) => string] {
  if (name === 'cpu') return ['CPU·H', amount];
  if (isByteResource(name)) return [name.toUpperCase(), (h) => (h === 0 ? '0' : `${formatBytes(h)}·h`)];
  return [`${name.toUpperCase()}·H`, amount];
}

function usageTable(r: UsageReport): string {
  const period = `usage from ${r.since} to ${r.until} (whole hours), by ${r.by}`;
  if (r.rows.length === 0) return `${period}\nnothing ended in this period`;
  const columns = r.resources.map((name) => [name, ...resourceColumn(name)] as const);
  const line = (row: UsageRow, key: string) => [
    key,
    `${row.jobs.succeeded}/${row.jobs.failed}/${row.jobs.cancelled}`,
    row.allocations,
    `${seconds(row.waitSeconds.mean)}/${seconds(row.waitSeconds.max)}`,
    amount(row.allocationHours),
    ...columns.map(([name, , show]) => show(row.resourceHours[name] ?? 0)),
  ];
  const lines = r.rows.map((row) => line(row, row.key));
  if (r.rows.length > 1) lines.push(line(r.totals, 'TOTAL'));
  return `${period}\n${table(
    [
      r.by.toUpperCase(),
      'JOBS OK/FAILED/CANCELLED',
      'ALLOCS',
      'WAIT MEAN/MAX',
      'HOURS',
      ...columns.map(([, header]) => header),
    ],
    lines,
    outputWidth(),
  )}`;
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break. */
const csvField = (v: string | number): string => {
  const text = String(v);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

/** One line per key, plain numbers in the API's units; no totals line (they are the column sums). */
function usageCsv(r: UsageReport): string {
  const unit = (name: string) =>
    name === 'cpu' ? 'cpu_core_hours' : isByteResource(name) ? `${name}_byte_hours` : `${name}_hours`;
  const header = [
    r.by,
    'succeeded',
    'failed',
    'cancelled',
    'allocations',
    'requeued',
    'retried',
    'wait_mean_seconds',
    'wait_max_seconds',
    'allocation_hours',
    ...r.resources.map(unit),
  ];
  const rows = r.rows.map((row) => [
    row.key,
    row.jobs.succeeded,
    row.jobs.failed,
    row.jobs.cancelled,
    row.allocations,
    row.requeued,
    row.retried,
    row.waitSeconds.mean,
    row.waitSeconds.max,
    row.allocationHours,
    ...r.resources.map((name) => row.resourceHours[name] ?? 0),
  ]);
  return [header, ...rows].map((cells) => cells.map(csvField).join(',')).join('\n');
}

export function registerUsageCommand(program: Command): void {
  const cmd = program
    .command('usage')
    .description(
      'resource·hours, jobs by outcome and waits per project, user or queue, over whole hours (allocations still running count when they end)',
    )
    .addOption(new Option('-o, --output <format>', 'output format').choices(FORMATS).default('table'))
    .option(
      '--project <name>',
      "only this project's usage (default: every project you can see — all of them for admins)",
    )
    .option(
      '--since <time>',
      'from this time (ISO 8601) or this long ago (7d, 12h); default 30d',
      time('since'),
    )
    .option('--until <time>', 'to this time or this long ago; default now', time('until'))
    .addOption(
      new Option('--by <key>', 'one line per project, user (who submitted) or cluster queue')
        .choices(USAGE_GROUPINGS)
        .default('project'),
    );
  examples(cmd, [
    'berth usage                                   # the last 30 days, per project',
    'berth usage --since 7d --by user',
    'berth usage --project ml --since 2026-11-01T00:00:00Z --until 2026-12-01T00:00:00Z',
    'berth usage --by queue -o csv > usage.csv',
    'berth usage -o json | jq .totals.resourceHours',
  ]).action(async (f: UsageFlags) => {
    const s = openSession({ output: f.output === 'json' ? 'json' : 'table' });
    const r = await s.client.get<UsageReport>('/usage', {
      query: { since: f.since, until: f.until, by: f.by, project: f.project },
    });
    if (f.output === 'csv') process.stdout.write(`${usageCsv(r)}\n`);
    else s.show(r, () => usageTable(r));
  });
}
