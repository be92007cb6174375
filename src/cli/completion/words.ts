/**
 * Shell completion, the pure part: given berth's command tree (commander's own, so commands and
 * flags never drift from the real CLI) and the words of a command line, what is being completed.
 * No I/O: the names a server knows are fetched elsewhere (live.ts).
 */
import { Help, type Argument, type Command, type Option } from 'commander';
import { argumentValue, flagValue, type NameKind, type ValueKind } from './kinds.js';

export interface Candidate {
  value: string;
  /** Shown next to it by zsh; bash ignores it. */
  description?: string;
}

export type Wanted =
  | { type: 'fixed'; candidates: Candidate[] }
  | { type: 'names'; kind: NameKind }
  /** The shell completes file names. */
  | { type: 'files' }
  | { type: 'nothing' };

export interface Completion {
  wanted: Wanted;
  /** Put before each candidate: `--project=`, or a list's items before its last comma. */
  stem: string;
  /** What is typed of the value so far: candidates start with it. */
  partial: string;
  /** Items already in the list being completed, not offered again. */
  taken: string[];
  /** Values given to flags earlier on the line, by long flag (the jobs offered are `--project`'s). */
  given: Record<string, string>;
}

/** Commander's view of what `--help` shows: hidden commands and options left out, help added. */
const help = new Help();

const takesValue = (o: Option): boolean => o.required || o.optional;
const isFlag = (word: string): boolean => word.startsWith('-') && word !== '-';

/** The option a typed flag names (`--target`, `-o`, `--target=x`, `-ojson`), and a value given with it. */
function findOption(cmd: Command, word: string): { option?: Option; inline?: string } {
  const options = [...cmd.options, ...help.visibleOptions(cmd)];
  if (word.startsWith('--')) {
    const eq = word.indexOf('=');
    const flag = eq < 0 ? word : word.slice(0, eq);
    const option = options.find((o) => o.long === flag);
    return { option, ...(eq < 0 ? {} : { inline: word.slice(eq + 1) }) };
  }
  const option = options.find((o) => o.short === word.slice(0, 2));
  return { option, ...(word.length > 2 && option && takesValue(option) ? { inline: word.slice(2) } : {}) };
}

/** A subcommand by name or alias; hidden ones too (typed in full, they are still commands). */
const findSubcommand = (cmd: Command, name: string): Command | undefined =>
  cmd.commands.find((c) => c.name() === name || c.aliases().includes(name));

/** The argument the n-th positional word fills (the last one again when it is variadic). */
function argumentAt(cmd: Command, n: number): Argument | undefined {
  const args = cmd.registeredArguments;
  const last = args.at(-1);
  return n < args.length ? args[n] : last?.variadic ? last : undefined;
}

/** The first line of a description, short enough for a completion menu. */
function summary(text: string): string | undefined {
  const line = text.split('\n')[0]?.replace(/\s+/g, ' ').trim() ?? '';
  if (line === '') return undefined;
  return line.length <= 80 ? line : `${line.slice(0, 79)}…`;
}

const candidate = (value: string, description: string): Candidate => {
  const d = summary(description);
  return d === undefined ? { value } : { value, description: d };
};

const subcommands = (cmd: Command): Candidate[] =>
  help.visibleCommands(cmd).map((c) => candidate(c.name(), c.description()));

const flags = (cmd: Command): Candidate[] =>
  help
    .visibleOptions(cmd)
    .filter((o) => o.long !== undefined)
    .map((o) => candidate(o.long!, o.description));

function optionValue(option: Option): ValueKind | undefined {
  if (option.argChoices) return { choices: option.argChoices };
  return flagValue(option.long, option.flags);
}

function argumentKind(path: readonly string[], arg: Argument): ValueKind | undefined {
  if (arg.argChoices) return { choices: arg.argChoices };
  return argumentValue(path, arg.name());
}

type Found = Omit<Completion, 'given'>;

const nothing = (partial: string): Found => ({
  wanted: { type: 'nothing' },
  stem: '',
  partial,
  taken: [],
});

const fixed = (candidates: Candidate[], partial: string): Found => ({
  wanted: { type: 'fixed', candidates },
  stem: '',
  partial,
  taken: [],
});

/** The completion of a value of kind `kind`, typed so far as `typed`, after `stem` (`--project=`). */
function valueCompletion(kind: ValueKind | undefined, typed: string, stem = ''): Found {
  if (kind === undefined) return nothing(typed);
  if ('files' in kind || 'command' in kind) return { ...nothing(typed), wanted: { type: 'files' } };
  const items = kind.list ? typed.split(',') : [typed];
  const partial = items.pop() ?? '';
  const listStem = items.map((i) => `${i},`).join('');
  const wanted: Wanted =
    'names' in kind
      ? { type: 'names', kind: kind.names }
      : { type: 'fixed', candidates: kind.choices.map((value) => ({ value })) };
  return { wanted, stem: stem + listStem, partial, taken: items };
}

/**
 * What the last of `words` (the words after `berth`; the last one is being typed, maybe empty)
 * asks for. Options before a subcommand are its parent's, as commander reads them
 * (`enablePositionalOptions`).
 */
export function analyse(root: Command, words: readonly string[]): Completion {
  const typed = words.at(-1) ?? '';
  const before = words.slice(0, -1);
  const given: Record<string, string> = {};
  const path: string[] = [];
  let cmd = root;
  let positionals = 0;
  let optionsEnded = false;
  /** `berth help <command>`: commander's implicit help command, not in the tree. */
  let helpOf: Command | undefined;
  /** The flag whose value the next word is. */
  let pending: Option | undefined;
  const found = (f: Found): Completion => ({ ...f, given });

  for (const word of before) {
    if (pending) {
      const option = pending;
      pending = undefined;
      // An optional value (`[x]`) is not taken from a word that is a flag itself.
      if (!(option.optional && isFlag(word))) {
        if (option.long) given[option.long] = word;
        continue;
      }
    }
    if (!optionsEnded && word === '--') {
      optionsEnded = true;
      continue;
    }
    if (!optionsEnded && isFlag(word)) {
      const { option, inline } = findOption(cmd, word);
      if (option && takesValue(option)) {
        if (inline === undefined) pending = option;
        else if (option.long) given[option.long] = inline;
      }
      continue;
    }
    if (helpOf) return found(nothing(typed));
    const sub = positionals === 0 ? findSubcommand(cmd, word) : undefined;
    if (sub) {
      cmd = sub;
      path.push(sub.name());
      continue;
    }
    if (positionals === 0 && word === 'help' && cmd.commands.length > 0) {
      helpOf = cmd;
      continue;
    }
    const arg = argumentAt(cmd, positionals++);
    // Not one of its commands: commander would refuse the line, nothing after it fits.
    if (!arg && cmd.commands.length > 0) return found(nothing(typed));
    // The job's own command line: berth reads nothing after its first word.
    if (arg && 'command' in (argumentKind(path, arg) ?? {}))
      return found(valueCompletion({ command: true }, typed));
  }

  if (pending) return found(valueCompletion(optionValue(pending), typed));
  if (!optionsEnded && typed.startsWith('--') && typed.includes('=')) {
    const { option, inline = '' } = findOption(cmd, typed);
    const stem = typed.slice(0, typed.length - inline.length);
    return found(
      option && takesValue(option) ? valueCompletion(optionValue(option), inline, stem) : nothing(typed),
    );
  }
  if (!optionsEnded && typed.startsWith('-')) return found(fixed(flags(cmd), typed));
  if (helpOf) {
    const commands = subcommands(helpOf).filter((c) => c.value !== 'help');
    return found(fixed(commands, typed));
  }
  if (positionals === 0 && cmd.commands.length > 0) return found(fixed(subcommands(cmd), typed));
  const arg = argumentAt(cmd, positionals);
  if (arg) return found(valueCompletion(argumentKind(path, arg), typed));
  // Nothing more to name: its flags, which is all it still takes.
  return found(optionsEnded ? nothing(typed) : fixed(flags(cmd), typed));
}
