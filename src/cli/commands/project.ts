/** `berth project …`: create, list, show, use, update, delete; members and privileges. */
import { Option, type Command } from 'commander';
import { ROLES, type Role } from '../../domain/roles.js';
import type { ProjectDetail, ProjectDetailView, ProjectView } from '../api-types.js';
import { apiPath } from '../client.js';
import { DEFAULT_PROJECT } from '../connection.js';
import { UsageError } from '../errors.js';
import { positiveNumber, repeatable, limitOrNone, limitValue } from '../flags.js';
import { fields, table, timeText, yesNo } from '../output.js';
import { checkCanRemember, forgetProject, rememberProject } from '../remember.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';
import { registerRegistryCommands } from './registry.js';

interface CreateFlags extends CommonFlags {
  queue: string;
  description?: string;
  tag?: string[];
  inactive?: boolean;
  weight?: number;
  maxQueued?: number | 'none';
}

interface UpdateFlags extends CommonFlags {
  description?: string;
  tag?: string[];
  clearTags?: boolean;
  queue?: string;
  active?: boolean;
  weight?: number;
  maxQueued?: number | 'none';
}

const projectPath = (name: string) => apiPath`/projects/${name}`;

const MAX_QUEUED_FLAG = '--max-queued <n|none>';
const MAX_QUEUED_HELP =
  "the most of its jobs queued at once; more submissions are refused (429) until some are admitted (admin; none: the queue's default)";

function describeProject(p: ProjectDetailView, current: boolean): string {
  return fields([
    ['name', p.name + (current ? '  (current)' : '')],
    ['description', p.description],
    ['queue', p.clusterQueue],
    ['tags', p.tags.join(', ')],
    ['active', yesNo(p.active)],
    ['weight', p.weight],
    ['max queued', p.maxQueued ?? "the queue's default"],
    ['your role', p.role],
    ['members', p.members.map((m) => `${m.user} (${m.role})`)],
    ['privileges', p.privileges],
    ['created', timeText(p.createdAt)],
    ['updated', timeText(p.updatedAt)],
  ]);
}

export function registerProjectCommands(program: Command): void {
  const project = program
    .command('project')
    .description('manage projects: the namespaces jobs live in, each bound to a cluster queue');

  examples(
    clientCommand(project, 'create <name>', 'create a project bound to a cluster queue (admin)')
      .requiredOption('--queue <queue>', 'cluster queue whose quota the project draws on')
      .option('--description <text>', 'what the project is for')
      .option('--tag <tag>', 'a tag (repeat, or separate with commas)', repeatable)
      .option('--inactive', 'create it inactive: it accepts no jobs until activated')
      .option('--weight <w>', 'fair-share weight in its queue (default 1)', positiveNumber)
      .option(MAX_QUEUED_FLAG, MAX_QUEUED_HELP, limitOrNone),
    ['berth project create ml --queue default --tag gpu --description "model training"'],
  ).action(async (name: string, f: CreateFlags) => {
    const s = openSession(f);
    const body = {
      name,
      clusterQueue: f.queue,
      ...(f.description !== undefined ? { description: f.description } : {}),
      ...(f.tag ? { tags: f.tag } : {}),
      ...(f.inactive ? { active: false } : {}),
      ...(f.weight !== undefined ? { weight: f.weight } : {}),
      ...(f.maxQueued !== undefined ? { maxQueued: limitValue(f.maxQueued) } : {}),
    };
    const created = await s.client.post<ProjectDetail>('/projects', body);
    s.show(created, () => `project ${created.name} created on cluster queue ${created.clusterQueue}`);
  });

  clientCommand(project, 'list', 'list the projects you can see; * marks the current one', {
    project: true,
  }).action(async (f: CommonFlags) => {
    const s = openSession(f);
    const projects = await s.client.get<ProjectView[]>('/projects');
    s.show(projects, () =>
      projects.length === 0
        ? 'no projects visible to you (an owner can add you: berth project member add PROJECT USER)'
        : table(
            ['CURRENT', 'NAME', 'QUEUE', 'TAGS', 'ACTIVE'],
            projects.map((p) => [
              p.name === s.project ? '*' : '',
              p.name,
              p.clusterQueue,
              p.tags.join(',') || '-',
              yesNo(p.active),
            ]),
          ),
    );
  });

  clientCommand(
    project,
    'show [name]',
    'a project with its members and privileges (default: the current one)',
    {
      project: true,
    },
  ).action(async (name: string | undefined, f: CommonFlags) => {
    const s = openSession(f);
    const p = await s.client.get<ProjectDetailView>(projectPath(name ?? s.project));
    s.show(p, () => describeProject(p, p.name === s.project));
  });

  examples(
    clientCommand(project, 'use <name>', 'make a project the current one (saved in the current context)'),
    ['berth project use ml', 'berth project list   # ml is marked current'],
  ).action(async (name: string, f: CommonFlags) => {
    const s = openSession(f);
    checkCanRemember(s.connection, name);
    const p = await s.client.get<ProjectDetailView>(projectPath(name));
    const context = rememberProject(s.connection, p.name);
    if (process.env.BERTH_PROJECT && process.env.BERTH_PROJECT !== p.name) {
      process.stderr.write(
        `berth: note: BERTH_PROJECT=${process.env.BERTH_PROJECT} is set and takes precedence\n`,
      );
    }
    s.show(p, () => `now using project ${p.name} (context ${context})`);
  });

  examples(
    clientCommand(project, 'update <name>', 'change a project; given fields replace the old ones')
      .option('--description <text>', 'new description')
      .option('--tag <tag>', 'replace the tags (repeat, or separate with commas)', repeatable)
      .option('--clear-tags', 'remove all tags')
      .option('--queue <queue>', 'move the project to another cluster queue (admin)')
      .addOption(new Option('--active', 'accept new jobs').conflicts('inactive'))
      .addOption(new Option('--inactive', 'accept no new jobs').conflicts('active'))
      .option(
        '--weight <w>',
        'fair-share weight in its queue: 2 gets twice the share of 1 (admin)',
        positiveNumber,
      )
      .option(MAX_QUEUED_FLAG, MAX_QUEUED_HELP, limitOrNone),
    [
      'berth project update ml --tag gpu --tag a100',
      'berth project update ml --inactive',
      'berth project update ml --weight 2',
      'berth project update ml --max-queued 10000',
    ],
  ).action(async (name: string, f: UpdateFlags & { inactive?: boolean }) => {
    if (f.tag && f.clearTags) throw new UsageError('--tag and --clear-tags cannot be used together');
    const body = {
      ...(f.description !== undefined ? { description: f.description } : {}),
      ...(f.tag ? { tags: f.tag } : f.clearTags ? { tags: [] } : {}),
      ...(f.queue !== undefined ? { clusterQueue: f.queue } : {}),
      ...(f.active ? { active: true } : f.inactive ? { active: false } : {}),
      ...(f.weight !== undefined ? { weight: f.weight } : {}),
      ...(f.maxQueued !== undefined ? { maxQueued: limitValue(f.maxQueued) } : {}),
    };
    if (Object.keys(body).length === 0) {
      throw new UsageError(
        'nothing to update: give --description, --tag, --clear-tags, --queue, --active, --inactive, --weight or --max-queued',
      );
    }
    const s = openSession(f);
    const p = await s.client.patch<ProjectDetail>(projectPath(name), body);
    s.show(p, () => `project ${p.name} updated`);
  });

  examples(
    clientCommand(project, 'delete <name>', 'delete a project (owner or admin)').option(
      '--cancel-jobs',
      'cancel its unfinished jobs first (without it, a project with unfinished jobs is not deleted)',
    ),
    ['berth project delete ml', 'berth project delete ml --cancel-jobs'],
  ).action(async (name: string, f: CommonFlags & { cancelJobs?: boolean }) => {
    const s = openSession(f);
    await s.client.delete(projectPath(name) + (f.cancelJobs ? '?cancelJobs=true' : ''));
    const forgotten = forgetProject(s.connection, name);
    s.show({ name, deleted: true }, () =>
      forgotten
        ? `project ${name} deleted; the current project is now ${DEFAULT_PROJECT}`
        : `project ${name} deleted`,
    );
  });

  const member = project.command('member').description('add or remove project members (owner or admin)');
  examples(
    clientCommand(member, 'add <project> <user>', 'add a member, or change its role').addOption(
      new Option('--role <role>', 'viewer < member < owner').choices(ROLES).default('member'),
    ),
    ['berth project member add ml alice', 'berth project member add ml bob --role owner'],
  ).action(async (name: string, user: string, f: CommonFlags & { role: Role }) => {
    const s = openSession(f);
    const p = await s.client.put<ProjectDetail>(apiPath`/projects/${name}/members/${user}`, { role: f.role });
    s.show(p, () => `${user} is now ${f.role} of project ${name}`);
  });
  clientCommand(member, 'remove <project> <user>', 'remove a member').action(
    async (name: string, user: string, f: CommonFlags) => {
      const s = openSession(f);
      const p = await s.client.delete<ProjectDetail>(apiPath`/projects/${name}/members/${user}`);
      s.show(p, () => `${user} removed from project ${name}`);
    },
  );

  examples(clientCommand(project, 'grant <project> <privilege>', 'grant a privilege to a project (admin)'), [
    'berth project grant ml target.gpu',
    'berth project grant ml resource.scratch-db',
  ]).action(async (name: string, privilege: string, f: CommonFlags) => {
    const s = openSession(f);
    const p = await s.client.put<ProjectDetail>(apiPath`/projects/${name}/privileges/${privilege}`);
    s.show(p, () => `privilege ${privilege} granted to project ${name}`);
  });
  clientCommand(project, 'revoke <project> <privilege>', 'revoke a privilege from a project (admin)').action(
    async (name: string, privilege: string, f: CommonFlags) => {
      const s = openSession(f);
      const p = await s.client.delete<ProjectDetail>(apiPath`/projects/${name}/privileges/${privilege}`);
      s.show(p, () => `privilege ${privilege} revoked from project ${name}`);
    },
  );
  registerRegistryCommands(project);
}
