/** `berth exec JOB [-i] [--rank N] -- CMD…`: a command run inside a running job. */
import type { Command } from 'commander';
import { localTerminal, runExec } from '../exec-stream.js';
import type { JobRef } from '../flags.js';
import { inJobCommand, jobOf, type InJobFlags } from '../job-command.js';
import { examples } from '../session.js';

export function registerExecCommand(program: Command): void {
  const cmd = inJobCommand(
    program,
    'exec',
    "run a command inside a running job — its processes, files, /tmp, uid, cgroups and environment — and exit with the command's exit status (the job's submitter and its project's owners; audited)",
  )
    .argument('<command...>', "the command and its arguments, after -- (looked up on the job's PATH)")
    .option('-i, --stdin', "send this terminal's input to the command (default: it gets none)")
    .option(
      '-t, --tty',
      "give the command a terminal of its own, this one's size (a shell, top, an editor): with -i, keys go to it raw, ^C included",
    );
  examples(cmd, [
    'berth exec -it 12 -- bash',
    'berth exec 12 -- ps -ef',
    'berth exec 12 -- nvidia-smi',
    'berth exec --rank 3 12 -- py-spy dump --pid 1',
    'tar -c data | berth exec -i 12 -- tar -x -C /tmp',
  ]).action(async (ref: JobRef, command: string[], f: InJobFlags & { stdin?: boolean; tty?: boolean }) => {
    const { s, id } = await jobOf(ref, f);
    const tty = f.tty ? localTerminal(process.stdout) : undefined;
    process.exitCode = await runExec(s.connection, id, command, f.rank ?? 0, {
      ...(f.stdin ? { stdin: process.stdin } : {}),
      ...(tty ? { tty } : {}),
      stdout: process.stdout,
      stderr: process.stderr,
    });
  });
}
