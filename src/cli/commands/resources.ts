/** `berth resources` (resource types and their use) and `berth job meta` (inside a job). */
import type { Command } from 'commander';
import { ApiError } from '../client.js';
import { CliError } from '../errors.js';
import { fields, table } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

interface ResourceType {
  name: string;
  kind: string;
  privilege: string | null;
  capacity: number;
  inUse: number;
  waiting: number;
}

interface SelfJob {
  id: number;
  resources: { type: string; id: number; state: string; metadata: Record<string, string> | null }[];
}

export function registerResourceCommands(program: Command): void {
  clientCommand(
    program,
    'resources',
    'list resource types with capacity, instances in use and jobs waiting',
  ).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const types = await s.client.get<ResourceType[]>('/resource-types');
    s.show(types, () =>
      types.length === 0
        ? 'no resource types are configured (see resources: in berth.yaml)'
        : table(
            ['NAME', 'KIND', 'CAPACITY', 'IN USE', 'WAITING', 'PRIVILEGE'],
            types.map((t) => [t.name, t.kind, t.capacity, t.inUse, t.waiting, t.privilege ?? '-']),
          ),
    );
  });

  const job = program.command('job').description('commands for use inside a running job');
  examples(
    clientCommand(job, 'meta [resource] [field]', "print the metadata of the job's managed resources"),
    [
      'berth job meta                       # every resource the job holds',
      'berth job meta scratch-db            # one resource',
      'psql "$(berth job meta scratch-db url)"   # one field, for $(…)',
    ],
  ).action(async (resource: string | undefined, field: string | undefined, f: CommonFlags) => {
    const s = openSession(f);
    let self: SelfJob;
    try {
      self = await s.client.get<SelfJob>('/job/self');
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) {
        throw new CliError("berth job meta runs inside a job: BERTH_TOKEN must be the job's token");
      }
      throw e;
    }
    const all = Object.fromEntries(
      self.resources.filter((r) => r.metadata).map((r) => [r.type, r.metadata!]),
    );
    if (resource === undefined) {
      s.show(
        all,
        () =>
          Object.entries(all)
            .map(([type, meta]) => `${type}:\n${indent(fields(Object.entries(meta)))}`)
            .join('\n') || 'this job holds no resources',
      );
      return;
    }
    const meta = all[resource];
    if (!meta) {
      const held = Object.keys(all);
      throw new CliError(`this job holds no resource ${resource} (it holds: ${held.join(', ') || 'none'})`);
    }
    if (field === undefined) {
      s.show(meta, () => fields(Object.entries(meta)));
      return;
    }
    const value = meta[field];
    if (value === undefined) {
      throw new CliError(
        `resource ${resource} has no field ${field} (fields: ${Object.keys(meta).join(', ')})`,
      );
    }
    process.stdout.write(s.json ? `${JSON.stringify(value)}\n` : `${value}\n`);
  });
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => (l ? `  ${l}` : l))
    .join('\n');
