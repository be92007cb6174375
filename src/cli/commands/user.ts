/** `berth user …`: users and their tokens (admin). */
import type { Command } from 'commander';
import type { NewToken, NewUser, User } from '../api-types.js';
import { apiPath } from '../client.js';
import { table, yesNo } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

const tokenNote = 'store it now: it is shown only once';

export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('manage users and their API tokens (admin)');

  examples(
    clientCommand(user, 'create <name>', 'create a user and print its first token (shown once)').option(
      '--admin',
      'make the user a global administrator',
    ),
    ['berth user create alice', 'berth user create alice -o json | jq -r .token'],
  ).action(async (name: string, f: CommonFlags & { admin?: boolean }) => {
    const s = openSession(f);
    const u = await s.client.post<NewUser>('/users', { name, ...(f.admin ? { admin: true } : {}) });
    s.show(u, () => `user ${u.name} created${u.admin ? ' (admin)' : ''}\ntoken: ${u.token}\n(${tokenNote})`);
  });

  clientCommand(user, 'list', 'list users').action(async (f: CommonFlags) => {
    const s = openSession(f);
    const users = await s.client.get<User[]>('/users');
    s.show(users, () =>
      table(
        ['NAME', 'ADMIN', 'CREATED'],
        users.map((u) => [u.name, yesNo(u.admin), u.createdAt]),
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
    clientCommand(user, 'token <name>', 'issue a new token for a user (admin, or yourself)').option(
      '--label <label>',
      'what the token is for',
    ),
    ['berth user token alice --label laptop'],
  ).action(async (name: string, f: CommonFlags & { label?: string }) => {
    const s = openSession(f);
    const t = await s.client.post<NewToken>(
      apiPath`/users/${name}/tokens`,
      f.label ? { label: f.label } : {},
    );
    s.show(t, () => `new token for ${t.name}: ${t.token}\n(${tokenNote})`);
  });
}
