/** `berth priority …`: named priorities (priority classes) jobs can be submitted with. */
import type { Command } from 'commander';
import type { PriorityClass } from '../api-types.js';
import { apiPath } from '../client.js';
import { integer } from '../flags.js';
import { table } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

interface CreateFlags extends CommonFlags {
  value: number;
  description?: string;
}

export function registerPriorityCommands(program: Command): void {
  const priority = program
    .command('priority')
    .description('manage priority classes: named priorities for berth submit --priority NAME');

  examples(
    clientCommand(priority, 'create <name>', 'define a priority class (admin)')
      .requiredOption('--value <n>', 'its priority: a whole number, higher is admitted first', integer)
      .option('--description <text>', 'what it is for'),
    [
      'berth priority create high --value 1000 --description "deadlines"',
      'berth priority create batch --value -100',
      'berth submit --priority high -- ./train.sh',
    ],
  ).action(async (name: string, f: CreateFlags) => {
    const s = openSession(f);
    const body = {
      name,
      value: f.value,
      ...(f.description !== undefined ? { description: f.description } : {}),
    };
    const c = await s.client.post<PriorityClass>('/priority-classes', body);
    s.show(c, () => `priority class ${c.name} created with value ${c.value}`);
  });

  clientCommand(priority, 'list', 'list priority classes, highest first').action(async (f: CommonFlags) => {
    const s = openSession(f);
    const classes = await s.client.get<PriorityClass[]>('/priority-classes');
    s.show(classes, () =>
      classes.length === 0
        ? 'no priority classes (an admin creates them: berth priority create NAME --value N)'
        : table(
            ['NAME', 'VALUE', 'DESCRIPTION'],
            classes.map((c) => [c.name, c.value, c.description || '-']),
          ),
    );
  });

  clientCommand(
    priority,
    'delete <name>',
    'delete a priority class (admin); jobs keep the priority they were given',
  ).action(async (name: string, f: CommonFlags) => {
    const s = openSession(f);
    await s.client.delete(apiPath`/priority-classes/${name}`);
    s.show({ name, deleted: true }, () => `priority class ${name} deleted`);
  });
}
