/**
 * `--project` on every command that reads or writes a project's data (issue #45): the command tree
 * is walked, and each command either takes `--project` or is listed here with why it does not —
 * the list the README gives; and `-o json` on each command but those that print what the job
 * prints. Then, end to end, a job's commands (`status`, `logs`, `cancel`,
 * `artifacts`) take the flag and refuse, in one line, a job outside the project named.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/program.js';
import { submit, waitDone } from '../helpers/jobs.js';
import { fails, ok, useCliServer } from './cli.js';

/** The commands without `--project`, by why. */
const WITHOUT: Record<string, string[]> = {
  'run berth itself, not a client': ['server', 'agent', 'completion', '__complete'],
  'manage connections on this machine': ['login', 'context list', 'context use', 'context delete'],
  'take the project as their argument': [
    'project create',
    'project use',
    'project update',
    'project delete',
    'project member add',
    'project member remove',
    'project grant',
    'project revoke',
    'project registry login',
    'project registry logout',
    'project registry list',
  ],
  "act on the installation's queues, priority classes, users, tokens, targets, resource types, images, store or figures":
    [
      'queue create',
      'queue list',
      'queue show',
      'queue update',
      'queue delete',
      'queue pending',
      'queue hold',
      'queue drain',
      'queue resume',
      'priority create',
      'priority list',
      'priority delete',
      'user create',
      'user list',
      'user delete',
      'user token',
      'token list',
      'token revoke',
      'targets',
      'resources',
      'images prune',
      'store copy',
      'store backup',
      'store restore',
      'store check',
      'diag',
    ],
  "run inside a job, for that job's own project": ['job meta'],
  'read a workload file or the whole server': ['simulate'],
};

/** Every command with no subcommands, by its path under `berth`. */
function leaves(c: Command, path: string[] = []): [string, Command][] {
  if (c.commands.length === 0) return [[path.join(' '), c]];
  return c.commands.flatMap((s) => leaves(s, [...path, s.name()]));
}

describe('--project on every command that reads or writes a project’s data', () => {
  it('is taken by each command, or the command is one of those that say why not', () => {
    const exempt = new Set(Object.values(WITHOUT).flat());
    const missing: string[] = [];
    const needless: string[] = [];
    for (const [path, cmd] of leaves(buildProgram())) {
      const has = cmd.options.some((o) => o.long === '--project');
      if (!has && !exempt.has(path)) missing.push(path);
      if (has && exempt.has(path)) needless.push(path);
    }
    assert.deepEqual(missing, [], 'commands without --project that no reason covers');
    assert.deepEqual(needless, [], 'commands listed as without --project that take it');
  });

  it('-o json on every command, but those whose output is the job’s own and berth’s own processes', () => {
    // The README's line: "Every client command but logs, exec, port-forward, run and attach".
    const withoutOutput = [
      'server',
      'agent',
      'completion',
      '__complete',
      'logs',
      'exec',
      'port-forward',
      'run',
      'attach',
    ];
    const without = leaves(buildProgram())
      .filter(([, cmd]) => !cmd.options.some((o) => o.long === '--output'))
      .map(([path]) => path);
    assert.deepEqual(without.sort(), withoutOutput.sort());
  });

  const cli = useCliServer();

  it("checks a job's project where a command names one, and says where the job is", async () => {
    await cli.request('POST', '/projects', { name: 'other', clusterQueue: 'default' });
    const job = await submit(cli.server.api, cli.server.adminToken, 'default', { script: 'echo kept' });
    await waitDone(cli.server.api, cli.server.adminToken, job.id);
    const id = String(job.id);
    assert.equal(ok(await cli.admin(['logs', id, '--project', 'default'])), 'kept\n');
    assert.match(ok(await cli.admin(['status', id, '--project', 'default'])), /state:\s+succeeded/);
    ok(await cli.admin(['artifacts', id, '--project', 'default']));
    const where = new RegExp(`job ${id} is in project "default", not "other"`);
    for (const args of [['logs'], ['status'], ['artifacts'], ['cancel'], ['attach'], ['exec']])
      fails(
        await cli.admin([...args, id, '--project', 'other', ...(args[0] === 'exec' ? ['--', 'true'] : [])]),
        1,
        where,
      );
  });
});
