/**
 * `berth project registry login|logout|list`: a project's credentials for the registries its jobs'
 * images come from (owners and admins; docs/IMAGES.md, "Private registries"). The password is read
 * from stdin, as `docker login --password-stdin`: never an argument, which `ps` and the shell's
 * history would keep.
 */
import type { Command } from 'commander';
import type { RegistryCredentialView } from '../../domain/registry-credential.js';
import { apiPath } from '../client.js';
import { UsageError } from '../errors.js';
import { table } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags } from '../session.js';

/** All of stdin, its last line end dropped; refused on a terminal (nothing would be piped). */
async function passwordFromStdin(): Promise<string> {
  if (process.stdin.isTTY)
    throw new UsageError(
      'pipe the password on stdin, e.g. printf %s "$TOKEN" | berth project registry login ml registry.example.org --username ci',
    );
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
  if (text === '') throw new UsageError('no password on stdin');
  return text;
}

export function registerRegistryCommands(project: Command): void {
  const registry = project
    .command('registry')
    .description("the registries a project's jobs pull private images from, and as whom (owner or admin)");
  examples(
    clientCommand(
      registry,
      'login <project> <registry>',
      "keep the project's credentials for a registry, the password (or token) read from stdin; its jobs' images from there are pulled with them",
    ).requiredOption('--username <name>', 'the user name at the registry'),
    [
      'printf %s "$REGISTRY_TOKEN" | berth project registry login ml registry.example.org --username ci',
      'berth project registry login ml 127.0.0.1:5000 --username alice < password.txt',
    ],
  ).action(async (name: string, host: string, f: CommonFlags & { username: string }) => {
    const password = await passwordFromStdin();
    const s = openSession(f);
    const c = await s.client.put<RegistryCredentialView>(apiPath`/projects/${name}/registries/${host}`, {
      username: f.username,
      password,
    });
    s.show(c, () => `project ${name} pulls from ${c.registry} as ${c.username}`);
  });
  clientCommand(
    registry,
    'logout <project> <registry>',
    "forget the project's credentials for a registry",
  ).action(async (name: string, host: string, f: CommonFlags) => {
    const s = openSession(f);
    await s.client.delete(apiPath`/projects/${name}/registries/${host}`);
    s.show({ project: name, registry: host }, () => `project ${name} no longer logs in to ${host}`);
  });
  clientCommand(
    registry,
    'list <project>',
    'the registries the project logs in to, and as whom (never a password)',
  ).action(async (name: string, f: CommonFlags) => {
    const s = openSession(f);
    const list = await s.client.get<RegistryCredentialView[]>(apiPath`/projects/${name}/registries`);
    s.show(list, () =>
      list.length === 0
        ? `project ${name} logs in to no registry (berth project registry login)`
        : table(
            ['REGISTRY', 'USERNAME', 'SET BY', 'SET AT'],
            list.map((c) => [c.registry, c.username, c.updatedBy, c.updatedAt]),
          ),
    );
  });
}
