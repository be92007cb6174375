/** `berth audit`: who changed what, when and from where (admins). */
import { InvalidArgumentError, Option, type Command } from 'commander';
import type { AuditEntry } from '../api-types.js';
import { parseDuration } from '../duration.js';
import { positiveInteger } from '../flags.js';
import { outputWidth, table } from '../output.js';
import { readPages } from '../pages.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

interface AuditFlags extends CommonFlags {
  since?: string;
  until?: string;
  user?: string;
  limit: number;
}

/** `2h` (that long ago) or a time (ISO 8601) → an ISO time for the API. */
function when(text: string): string {
  const seconds = parseDuration(text);
  if (seconds !== undefined) return new Date(Date.now() - seconds * 1000).toISOString();
  const ms = Date.parse(text);
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError('must be a time (2030-01-31T12:00:00Z) or a span ago (2h, 7d)');
  return new Date(ms).toISOString();
}

/** The detail as one short line: `key=value` pairs. */
const detailText = (d: Record<string, unknown> | undefined): string =>
  Object.entries(d ?? {})
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');

export function registerAuditCommand(program: Command): void {
  const cmd = clientCommand(program, 'audit', 'who changed what, when and from where, newest first (admins)')
    .option('--since <time>', 'from this time (ISO 8601) or this long ago (2h, 7d)', when)
    .option('--until <time>', 'before this time (ISO 8601) or this long ago', when)
    .option('--user <name>', 'only what this user did')
    .option('--project <name>', 'only changes in this project')
    .addOption(
      new Option('--limit <n>', 'at most this many entries').argParser(positiveInteger).default(100),
    );
  examples(cmd, ['berth audit --since 1d', 'berth audit --user alice --project ml -o json']).action(
    async (f: AuditFlags) => {
      const s = openSession(f);
      const entries = await readPages<AuditEntry>(
        s.client,
        '/audit',
        { since: f.since, until: f.until, user: f.user, project: f.project },
        f.limit,
      );
      s.show(entries, () =>
        entries.length === 0
          ? 'no changes recorded that match'
          : table(
              ['TIME', 'WHO', 'FROM', 'ACTION', 'SUBJECT', 'PROJECT', 'DETAIL'],
              entries.map((e) => [
                e.at,
                e.actor,
                e.address,
                e.action,
                e.subject,
                e.project,
                detailText(e.detail),
              ]),
              outputWidth(),
            ),
      );
    },
  );
}
