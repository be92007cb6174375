/** `berth context …`: the saved connections in the user's config file. */
import type { Command } from 'commander';
import { configPath, isUrlContext, loadConfig, saveConfig } from '../config.js';
import { DEFAULT_PROJECT } from '../connection.js';
import { CliError } from '../errors.js';
import { table } from '../output.js';
import { clientCommand, printer, type CommonFlags } from '../session.js';

interface ContextRow {
  name: string;
  current: boolean;
  url?: string;
  dataDir?: string;
  project: string;
  /** HTTPS: the CA file trusted for its server. */
  ca?: string;
}

function requireContext(name: string) {
  const config = loadConfig();
  if (!config.contexts[name]) {
    const known = Object.keys(config.contexts);
    throw new CliError(
      `no context "${name}" in ${configPath()}${known.length ? ` (known: ${known.join(', ')})` : ''}`,
    );
  }
  return config;
}

export function registerContextCommands(program: Command): void {
  const context = program
    .command('context')
    .description('saved servers (`berth login`, or a local server remembered by `berth project use`)');

  clientCommand(context, 'list', 'list contexts; * marks the current one (tokens are not shown)').action(
    (f: CommonFlags) => {
      const config = loadConfig();
      const rows: ContextRow[] = Object.entries(config.contexts).map(([name, c]) => ({
        name,
        current: name === config.current,
        ...(isUrlContext(c) ? { url: c.url } : { dataDir: c.dataDir }),
        project: c.project ?? DEFAULT_PROJECT,
        ...(isUrlContext(c) && c.ca ? { ca: c.ca } : {}),
      }));
      // A CA column only when some context has one: most have none.
      const withCa = rows.some((r) => r.ca !== undefined);
      printer(f).show(rows, () =>
        rows.length === 0
          ? `no contexts in ${configPath()}`
          : table(
              ['CURRENT', 'NAME', 'SERVER', 'PROJECT', ...(withCa ? ['CA'] : [])],
              rows.map((r) => [
                r.current ? '*' : '',
                r.name,
                r.url ?? `local: ${r.dataDir}`,
                r.project,
                ...(withCa ? [r.ca ?? ''] : []),
              ]),
            ),
      );
    },
  );

  clientCommand(context, 'use <name>', 'make a context the current one').action(
    (name: string, f: CommonFlags) => {
      const config = requireContext(name);
      config.current = name;
      saveConfig(config);
      printer(f).show({ current: name }, () => `context ${name} is now current`);
    },
  );

  clientCommand(context, 'delete <name>', 'forget a context and its token').action(
    (name: string, f: CommonFlags) => {
      const config = requireContext(name);
      delete config.contexts[name];
      if (config.current === name) delete config.current;
      saveConfig(config);
      printer(f).show({ name, deleted: true }, () => `context ${name} deleted`);
    },
  );
}
