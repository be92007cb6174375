/** `berth token …`: list and revoke API tokens (your own; admins anyone's). */
import type { Command } from 'commander';
import type { TokenView, WhoAmI } from '../api-types.js';
import { apiPath, type ApiClient } from '../client.js';
import { CliError } from '../errors.js';
import { personTime } from '../../domain/reason-times.js';
import { table, timeText } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

/** The signed-in user's name: whose tokens `berth token` acts on by default. */
async function myName(client: ApiClient): Promise<string> {
  const me = await client.get<WhoAmI>('/whoami');
  if (me.kind !== 'user')
    throw new CliError('a job or project token has no tokens of its own; use a user token');
  return me.name;
}

function expiry(t: TokenView, now: number): string | null {
  if (t.expiresAt === null) return null;
  const at = Date.parse(t.expiresAt);
  return at <= now ? `${personTime(at, now, { relative: false })} (expired)` : personTime(at, now);
}

export function registerTokenCommands(program: Command): void {
  const token = program
    .command('token')
    .description('list and revoke API tokens (yours; admins: anyone’s). New ones: berth user token NAME');

  examples(
    clientCommand(
      token,
      'list',
      "a user's tokens: id, label, created, last used, expiry (never the token)",
    ).option('--user <name>', 'whose tokens (admins; default: your own)'),
    ['berth token list', 'berth token list --user alice -o json'],
  ).action(async (f: CommonFlags & { user?: string }) => {
    const s = openSession(f);
    const name = f.user ?? (await myName(s.client));
    const tokens = await s.client.get<TokenView[]>(apiPath`/users/${name}/tokens`);
    const now = Date.now();
    s.show(tokens, () =>
      tokens.length === 0
        ? `${name} has no tokens`
        : table(
            ['ID', 'LABEL', 'CREATED', 'LAST USED', 'EXPIRES'],
            tokens.map((t) => [
              t.id,
              t.label,
              timeText(t.createdAt, now),
              timeText(t.lastUsedAt, now),
              expiry(t, now),
            ]),
          ),
    );
  });

  examples(
    clientCommand(
      token,
      'revoke <id>',
      'revoke a token by its id (berth token list): it stops working at once',
    ).option('--user <name>', 'whose token it is (optional: the id is enough)'),
    ['berth token revoke 3f9c0a1b2c4d', 'berth token revoke 3f9c0a1b2c4d --user alice'],
  ).action(async (id: string, f: CommonFlags & { user?: string }) => {
    const s = openSession(f);
    const path = f.user === undefined ? apiPath`/tokens/${id}` : apiPath`/users/${f.user}/tokens/${id}`;
    const t = await s.client.delete<TokenView & { name: string }>(path);
    s.show(t, () => `token ${t.id} ("${t.label}") of ${t.name} revoked`);
  });
}
