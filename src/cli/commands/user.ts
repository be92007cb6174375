/** `berth user …`: users and their tokens (admin). */
import type { Command } from 'commander';
import type { CreatedUser, NewTokenView, User } from '../api-types.js';
import { apiPath } from '../client.js';
import { table, timeText, yesNo } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

const tokenNote = 'store it now: it is shown only once';
const expiresHelp = 'the token expires after this long: 30d, 12h, 90m (default: never)';

/** `--expires 30d` as the API takes it; the server checks the duration and says what is wrong. */
const expiresIn = (flag: string | undefined): { expiresIn?: string } =>
  flag === undefined ? {} : { expiresIn: flag };

const expiryNote = (expiresAt: string | null): string =>
  expiresAt ? `\nexpires: ${timeText(expiresAt)}` : '';

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('manage users and their API tokens (admin)');

  examples(
    clientCommand(user, 'create <name>', 'create a user and print its first token (shown once)')
      .option('--admin', 'make the user a global administrator')
      .option('--expires <duration>', expiresHelp),
    ['berth user create alice', 'berth user create alice --expires 30d -o json | jq -r .token'],
  ).action(async (name: string, f: CommonFlags & { admin?: boolean; expires?: string }) => {
    const s = openSession(f);
    const u = await s.client.post<CreatedUser>('/users', {
      name,
      ...(f.admin ? { admin: true } : {}),
      ...(f.expires === undefined ? {} : { tokenExpiresIn: f.expires }),
    });
    s.show(
      u,
      () =>
        `user ${u.name} created${u.admin ? ' (admin)' : ''}\ntoken: ${u.token}${expiryNote(u.tokenExpiresAt)}\n(${tokenNote})`,
    );
  });

  clientCommand(user, 'list', 'list users').action(async (f: CommonFlags) => {
    const s = openSession(f);
    const users = await s.client.get<User[]>('/users');
    s.show(users, () =>
      table(
        ['NAME', 'ADMIN', 'CREATED'],
        users.map((u) => [u.name, yesNo(u.admin), timeText(u.createdAt)]),
      ),
    );
  });

  clientCommand(user, 'delete <name>', 'delete a user and revoke its tokens').action(
    async (name: string, f: CommonFlags) => {
      const s = openSession(f);
      await s.client.delete(apiPath`/users/${name}`);
      s.show({ name, deleted: true }, () => `user ${name} deleted`);
    },
  );

  examples(
    clientCommand(user, 'token <name>', 'issue a new token for a user (admin, or yourself)')
      .option('--label <label>', 'what the token is for')
      .option('--expires <duration>', expiresHelp),
    ['berth user token alice --label laptop', 'berth user token alice --label ci --expires 30d'],
  ).action(async (name: string, f: CommonFlags & { label?: string; expires?: string }) => {
    const s = openSession(f);
    const t = await s.client.post<NewTokenView>(apiPath`/users/${name}/tokens`, {
      ...(f.label ? { label: f.label } : {}),
      ...expiresIn(f.expires),
    });
    s.show(
      t,
      () => `new token for ${t.name}: ${t.token}\nid: ${t.id}${expiryNote(t.expiresAt)}\n(${tokenNote})`,
    );
  });
}
