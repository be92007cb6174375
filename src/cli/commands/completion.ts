/**
 * `berth completion bash|zsh` prints a shell completion script; the script calls the hidden
 * `berth __complete -- WORDS…` at each TAB, which prints the candidates for the last word.
 */
import { Argument, type Command } from 'commander';
import { completionLines, DONE } from '../completion/lines.js';
import { liveNames, LIVE_TIMEOUT_MS } from '../completion/live.js';
import { completionScript, SHELLS, type Shell } from '../completion/scripts.js';
import { analyse, type Candidate } from '../completion/words.js';
import { examples } from '../session.js';

export function registerCompletionCommands(program: Command): void {
  const cmd = program
    .command('completion')
    .description(
      'print the shell completion script for bash or zsh: commands, flags, and names from the server',
    )
    .addArgument(new Argument('<shell>', 'bash or zsh').choices(SHELLS))
    .addHelpText(
      'after',
      `
It completes commands and flags, and the names the server knows: projects, cluster queues,
targets, priority classes, resource types, users, and the job ids of the current project, asked
at each TAB of the server in use (found as any command finds it), for at most ${LIVE_TIMEOUT_MS / 1000} s. Without a
server there are no names; commands and flags still complete. The bash-completion package loads
~/.local/share/bash-completion/completions/berth by itself (make the directory first).`,
    );
  examples(cmd, [
    'source <(berth completion bash)         # bash, this shell (or add it to ~/.bashrc)',
    'berth completion bash > ~/.local/share/bash-completion/completions/berth   # bash, every shell',
    'source <(berth completion zsh)          # zsh, after compinit (or add it to ~/.zshrc)',
    'berth completion zsh > "${fpath[1]}/_berth"                              # zsh, every shell',
  ]).action((shell: Shell) => {
    process.stdout.write(completionScript(shell));
  });

  program
    .command('__complete', { hidden: true })
    .description('the candidates for the last of WORDS, one a line (what the completion scripts call)')
    .argument('[words...]', 'the words after berth on the line, the last one being typed')
    .helpOption(false)
    .allowUnknownOption()
    .action(async (words: string[]) => {
      // Whatever happens, the shell gets candidates or nothing: never an error.
      let lines: string[];
      try {
        const completion = analyse(program, words.length > 0 ? words : ['']);
        const { wanted } = completion;
        const candidates: Candidate[] =
          wanted.type === 'fixed'
            ? wanted.candidates
            : wanted.type === 'names'
              ? await liveNames(wanted.kind, completion.given['--project'])
              : [];
        lines = completionLines(completion, candidates);
      } catch {
        lines = [DONE];
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
