/**
 * `berth run -it [options] -- CMD`: an interactive job, queued like any job, then its terminal
 * here; `berth attach JOB`: that terminal taken back (after a dropped connection, from another
 * machine). The job's exit code is berth's own.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Command } from 'commander';
import { isTerminal } from '../../domain/job.js';
import type { Job } from '../api-types.js';
import { apiPath, type ApiClient } from '../client.js';
import { CliError, UsageError } from '../errors.js';
import { attachPath, localTerminal, runSession, type ExecIo } from '../exec-stream.js';
import { jobRef, type JobRef } from '../flags.js';
import { exitCodeOf, inProject, jobPath, resolveJob, stateLine } from '../job-watch.js';
import { personTime } from '../../domain/reason-times.js';
import { reasonText } from '../output.js';
import { clientCommand, examples, openSession, type Session } from '../session.js';
import { jobSpecOptions, submitBody, type SubmitFlags } from '../submit-options.js';

interface TerminalFlags {
  stdin?: boolean;
  tty?: boolean;
}

/** The shell's exit code for "interrupted by Ctrl-C". */
const EXIT_INTERRUPTED = 130;

export function registerRunCommands(program: Command): void {
  registerRun(program);
  registerAttach(program);
}

const terminalOptions = (cmd: Command): Command =>
  cmd
    .option('-i, --stdin', "send this terminal's input to the job (keys, ^C included with -t)")
    .option('-t, --tty', "put this terminal in raw mode, at the job terminal's size, following its changes");

function registerRun(program: Command): void {
  const cmd = terminalOptions(
    jobSpecOptions(
      clientCommand(
        program,
        'run',
        'run an interactive job: it queues like any job (quota, fair share, priorities), then its command gets a terminal here; exit with its exit code. A dropped connection leaves it running a while (interactive.detachGrace): berth attach takes it back',
        { project: true, output: false },
      ).argument('<command...>', 'the command and its arguments, after --'),
    ),
  ).passThroughOptions();
  examples(cmd, [
    'berth run -it --timeout 2h -- bash',
    'berth run -it --request cpu=4,memory=16Gi,nvidia.com/gpu=1 --timeout 4h -- python',
    'berth run -it --image registry.example.org/team/pytorch:2.3 --timeout 1h -- bash',
    "printf 'make test\\nexit $?\\n' | berth run -i --timeout 30m -- sh",
  ]).action(async (command: string[], f: SubmitFlags & TerminalFlags) => {
    const io = terminalIo(f);
    const s = openSession(f);
    const body = { ...submitBody(command, f), interactive: true };
    const submitted = await s.client.post<Job>(apiPath`/projects/${s.project}/jobs`, body);
    const job = await untilRunning(s.client, submitted, true);
    if (!job) return;
    process.exitCode = await attachTo(s, job.id, io);
  });
}

function registerAttach(program: Command): void {
  const cmd = terminalOptions(
    clientCommand(
      program,
      'attach',
      "take an interactive job's terminal back (berth run -it): its recent output, then as it comes; exit with its exit code. Another attach, elsewhere, is let go",
      { project: true, output: false },
    ).argument('<job>', 'the interactive job (berth jobs shows them)', jobRef),
  );
  examples(cmd, ['berth attach -it 12']).action(
    async (ref: JobRef, f: TerminalFlags & { project?: string }) => {
      const io = terminalIo(f);
      const s = openSession(f);
      const id = await resolveJob(s.client, ref);
      const found = await s.client.get<Job>(jobPath(id));
      inProject(found, f.project);
      const job = await untilRunning(s.client, found, false);
      if (!job) return;
      if (!job.interactive)
        throw new CliError(
          `job ${id} is not interactive: it has no terminal to attach to (berth exec -it ${id} -- sh runs a shell inside it)`,
        );
      process.exitCode = await attachTo(s, id, io);
    },
  );
}

/** This process's streams as the session's, as `-i` and `-t` ask. */
function terminalIo(f: TerminalFlags): ExecIo {
  if (f.tty && !process.stdin.isTTY && f.stdin)
    throw new UsageError(
      '-t puts this terminal in raw mode, but stdin is not a terminal: leave -t out (-i sends it)',
    );
  return {
    // Piped input's end is typed as ^D (the shell then ends as after a script); a terminal's end
    // is its hang-up (a closed window): the job runs on for berth attach, as after a dropped connection.
    ...(f.stdin ? { stdin: process.stdin, endAsEof: !process.stdin.isTTY } : {}),
    ...(f.tty ? { tty: localTerminal(process.stdout) } : {}),
    stdout: process.stdout,
    stderr: process.stderr,
  };
}

async function attachTo(s: Session, id: number, io: ExecIo): Promise<number> {
  const size = io.tty ?? { cols: 80, rows: 24 };
  const code = await runSession(s.connection, attachPath(id, size), io);
  // The terminal's raw mode left the cursor where the job did: the next prompt on a line of its own.
  if (io.tty) process.stderr.write('\r\n');
  return code;
}

/**
 * Waits until the job runs, saying where it waits while it waits (on stderr, one line rewritten
 * on a terminal); Ctrl-C meanwhile cancels a job this command submitted (`cancelOnInterrupt`).
 * Undefined when it ended first (said, and its exit code set).
 */
async function untilRunning(
  client: ApiClient,
  first: Job,
  cancelOnInterrupt: boolean,
): Promise<Job | undefined> {
  const err = process.stderr;
  let shown = '';
  const say = (line: string) => {
    if (line === shown) return;
    shown = line;
    if (err.isTTY) err.write(`\r\x1b[2K${line}`);
    else err.write(`${line}\n`);
  };
  const interrupted = () => {
    const go = async () => {
      if (cancelOnInterrupt) await client.post(apiPath`/jobs/${first.id}/cancel`).catch(() => undefined);
      err.write(
        `\nberth: ${cancelOnInterrupt ? `cancelled job ${first.id}` : `stopped waiting for job ${first.id}; it goes on`}\n`,
      );
      process.exit(EXIT_INTERRUPTED);
    };
    void go();
  };
  process.once('SIGINT', interrupted);
  try {
    let job = first;
    for (let interval = 100; job.state !== 'running'; interval = Math.min(2 * interval, 1000)) {
      if (isTerminal(job.state)) {
        if (shown) err.write(err.isTTY ? '\n' : '');
        err.write(`${stateLine(job)}\n`);
        process.exitCode = exitCodeOf(job);
        return undefined;
      }
      say(waitingLine(job, Date.now()));
      await delay(interval);
      job = await client.get<Job>(jobPath(job.id));
    }
    if (shown && err.isTTY) err.write('\r\x1b[2K');
    return job;
  } finally {
    process.off('SIGINT', interrupted);
  }
}

/** "job 12 waiting: 3rd in queue gpu, estimated start 14:02 (in 5m)"; "job 12 starting: …". Pure. */
export function waitingLine(job: Job, now: number): string {
  if (job.state !== 'queued') return `job ${job.id} starting: ${reasonText(job.reason, now)}`;
  const where =
    job.position === null
      ? `in queue ${job.clusterQueue}`
      : `${ordinal(job.position)} in queue ${job.clusterQueue}`;
  const at = job.estimatedStartAt ? Date.parse(job.estimatedStartAt) : NaN;
  const when = Number.isNaN(at)
    ? ''
    : at <= now
      ? ', estimated start now'
      : `, estimated start ${personTime(at, now)}`;
  return `job ${job.id} waiting: ${where}${when} — ${reasonText(job.reason, now)}`;
}

/** 1 → 1st, 2 → 2nd, 11 → 11th, 23 → 23rd. */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${suffix}`;
}
