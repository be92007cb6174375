/**
 * What every client command shares: `-o/--output`, `--project`, the resolved connection and an
 * API client. New commands (submit, jobs, logs, …) are declared with `clientCommand` and start
 * their action with `openSession(flags)`.
 */
import { Option, type Command } from 'commander';
import type { ApiClient } from './client.js';
import { clientFor, resolveConnection, type Connection } from './connection.js';
import { json } from './output.js';

export const OUTPUT_FORMATS = ['table', 'json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface CommonFlags {
  output?: OutputFormat;
  project?: string;
}

export interface Printer {
  json: boolean;
  /** Prints `data` as JSON with `-o json`, else what `human` renders. */
  show(data: unknown, human: () => string): void;
}

export interface Session extends Printer {
  client: ApiClient;
  connection: Connection;
  /** The current project (--project, BERTH_PROJECT, the context's, or "default"). */
  project: string;
}

export function printer(flags: CommonFlags): Printer {
  const asJson = flags.output === 'json';
  return {
    json: asJson,
    show(data, human) {
      const out = asJson ? json(data) : human();
      if (out !== '') process.stdout.write(out.endsWith('\n') ? out : `${out}\n`);
    },
  };
}

export function openSession(flags: CommonFlags): Session {
  const connection = resolveConnection({ project: flags.project });
  return { ...printer(flags), client: clientFor(connection), connection, project: connection.project };
}

/** Adds `-o/--output`, and `--project` when the command acts on the current project. */
export function clientCommand(
  parent: Command,
  spec: string,
  description: string,
  opts: { project?: boolean; output?: boolean } = {},
): Command {
  const cmd = parent.command(spec).description(description);
  // Not on a command whose output is the job's own (a terminal's bytes): -o would mean nothing.
  if (opts.output !== false)
    cmd.addOption(
      new Option('-o, --output <format>', 'output format').choices(OUTPUT_FORMATS).default('table'),
    );
  if (opts.project) cmd.option('--project <name>', 'project to act on (default: the current project)');
  return cmd;
}

/** Help text listing examples, shown after the options. */
export function examples(cmd: Command, lines: string[]): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}
