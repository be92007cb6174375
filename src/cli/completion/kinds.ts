/**
 * Shell completion: which flag and which argument takes which kind of value. This is the one
 * table to touch when a command gains a flag or an argument that names something; commands and
 * flags themselves come from commander's tree, and choices declared there (`-o`, `--strategy`)
 * need no entry.
 */
import { JOB_STATES } from '../../domain/job.js';

/** Names berth knows: the server's (asked through the CLI's connection), or the config file's. */
export type NameKind =
  'project' | 'queue' | 'target' | 'job' | 'unfinished-job' | 'priority' | 'resource' | 'user' | 'context';

/**
 * What a value is. `list`: a comma-separated list (`--state queued,running`), completed after its
 * last comma. `command`: the job's own command line, berth's options end there; the shell
 * completes file names.
 */
export type ValueKind =
  | { names: NameKind; list?: boolean }
  | { choices: readonly string[]; list?: boolean }
  | { files: true }
  | { command: true };

/** Flags by long name, in every command that has them. */
export const FLAGS: Readonly<Record<string, ValueKind>> = {
  '--project': { names: 'project' },
  '--queue': { names: 'queue' },
  '--target': { names: 'target' },
  '--priority': { names: 'priority' },
  '--resource': { names: 'resource', list: true },
  '--after': { names: 'job', list: true },
  '--after-any': { names: 'job', list: true },
  '--after-failed': { names: 'job', list: true },
  '--state': { choices: JOB_STATES, list: true },
  '--user': { names: 'user' },
  // `berth store copy -o`; client commands' `-o` declares its choices in commander.
  '--output': { choices: ['json'] },
};

/** Arguments by command path and argument name; `*`: in every command. */
export const ARGUMENTS: Readonly<Record<string, Readonly<Record<string, ValueKind>>>> = {
  '*': {
    job: { names: 'job' },
    project: { names: 'project' },
    user: { names: 'user' },
    config: { files: true },
  },
  cancel: { job: { names: 'unfinished-job' } },
  submit: { command: { command: true } },
};

/**
 * `<name>` in these groups names one that exists (`berth queue show <name>`), except under
 * `create`, which makes a new one.
 */
const NAMED_BY_GROUP: Record<string, NameKind> = {
  project: 'project',
  queue: 'queue',
  priority: 'priority',
  user: 'user',
  context: 'context',
};

/** A value placeholder that names a file or directory: `--config <file>`, `--data-dir <dir>`. */
const FILE_PLACEHOLDER = /[<[](file|dir)[\]>]/;

export function flagValue(long: string | undefined, flags: string): ValueKind | undefined {
  if (long !== undefined && FLAGS[long]) return FLAGS[long];
  return FILE_PLACEHOLDER.test(flags) ? { files: true } : undefined;
}

/** `path`: the command's names from the root down, e.g. `['project', 'use']`. */
export function argumentValue(path: readonly string[], name: string): ValueKind | undefined {
  const own = ARGUMENTS[path.join(' ')]?.[name];
  if (own) return own;
  const [group, command] = path;
  if (name === 'name' && path.length === 2 && command !== 'create' && group && NAMED_BY_GROUP[group]) {
    return { names: NAMED_BY_GROUP[group] };
  }
  return ARGUMENTS['*']?.[name];
}
