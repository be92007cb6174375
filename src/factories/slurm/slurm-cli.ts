/**
 * A small driver for Slurm's command-line tools (sbatch, squeue, scancel, sinfo; Slurm 22.05),
 * for the Slurm factory: each berth worker is one batch job. Commands run with execFile (no
 * shell), with SLURM_CONF in their environment when given, and a timeout; every failure is a
 * SlurmError whose message names the command and carries its stderr on one line.
 */
import { execFile, type ExecFileException } from 'node:child_process';
import type { CommandRunner } from './command-runner.js';
import { parseSqueue, SQUEUE_FORMAT, type SlurmJob } from './squeue-format.js';

export { expandHostlist, isEndedState, parseSlurmTime, parseSqueue, type SlurmJob } from './squeue-format.js';

export interface SlurmCliOptions {
  /** The cluster's slurm.conf (SLURM_CONF for every command); else the commands' default. */
  slurmConf?: string;
  /** Extra environment for the commands. */
  env?: Record<string, string>;
  /** How long one command may take; default 30 s. */
  commandTimeoutMs?: number;
  /** Runs the commands in a helper process (command-runner.ts) rather than in this one. */
  runner?: CommandRunner;
}

export interface SubmitRequest {
  /** --job-name; no control characters. */
  name: string;
  /** The batch script's text (starting with #!), given to sbatch on stdin. */
  script: string;
  partition?: string;
  account?: string;
  qos?: string;
  /** --time, rounded up to whole minutes (Slurm's granularity), at least 1. */
  timeLimitSeconds?: number;
  cpusPerTask?: number;
  /** --nodes: a gang of N nodes; default 1. */
  nodes?: number;
  /** --chdir; else sbatch's working directory. */
  workdir?: string;
  /**
   * --uid and --gid: the Unix user the job runs as, when not the submitter (a project mapped to a
   * user of the cluster; only root and Slurm's SlurmUser may).
   */
  runAs?: { uid: number; gid: number };
  /** --gres: generic resources per node (`gpu:2`, `gpu:a100:1,nic:1`). */
  gres?: string;
  /** --output, a Slurm filename pattern (%j is the job id); default /dev/null. */
  output?: string;
  /**
   * Variables for the job, values passed unchanged (commas, quotes, $, newlines): they go into
   * sbatch's own environment, which holds nothing else the job should not get, and --export=ALL
   * passes it on, so no value is ever parsed by sbatch's comma-separated --export syntax, nor
   * shows in the process list or an error message. Names must be shell identifiers and not start
   * with SLURM_ or SBATCH_ (sbatch reads those).
   */
  env?: Record<string, string>;
  /**
   * Variables of the submitter's own environment the job gets too (PATH, HOME, …). Nothing else
   * of it reaches the job but Slurm's SLURM_* (a server's environment may hold secrets); `true`
   * passes all of it (--export=ALL).
   */
  inherit?: string[] | true;
  /** sbatch options from configuration, placed after berth's own, so they win. */
  extraArgs?: string[];
}

export interface JobFilter {
  /** Only these job ids (an empty list matches nothing); ids Slurm no longer knows are absent. */
  ids?: string[];
  /** Only jobs whose name starts with this. */
  namePrefix?: string;
}

export interface CancelOptions {
  /** Send this signal (TERM, USR1, 9, ...) instead of cancelling the job. */
  signal?: string;
  /** Signal the batch shell too, not only the job's steps (scancel --full). */
  full?: boolean;
}

/** A Slurm command failed: it exited non-zero, timed out, or could not be run. */
export class SlurmError extends Error {
  override readonly name = 'SlurmError';

  constructor(
    message: string,
    /** The command line, for logs. */
    readonly command: string,
    /** Its exit status; null when it did not exit by itself (not found, timed out). */
    readonly exitCode: number | null,
    /** Its stderr, as it printed it. */
    readonly stderr: string,
  ) {
    super(message);
  }
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** squeue lists every job of the cluster (up to MaxJobCount): far more than execFile's 1 MB default. */
const MAX_OUTPUT = 256 * 1024 * 1024;
/** A plain or array job id; anything else squeue/scancel reject as a usage error, not as unknown. */
const JOB_ID = /^\d+(?:_\d+)?$/;
const MAX_JOBS_ARG = 64 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Input variables of sbatch itself: in its environment they would change the submission. */
const RESERVED_ENV = /^(?:SLURM|SBATCH)_/;
/** What squeue -j and scancel say about a job the controller has forgotten (or never had). */
const UNKNOWN_JOB = /Invalid job id specified/i;
const ALREADY_DONE = /already completing or completed/i;

export class SlurmCli {
  private readonly timeoutMs: number;
  /** The server's settings for Slurm's commands (SLURM_*, SBATCH_*), read once. */
  private settings: Record<string, string> | undefined;

  constructor(private readonly opts: SlurmCliOptions = {}) {
    this.timeoutMs = opts.commandTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Submits a batch job; resolves with its id. A SlurmError after a timeout does not prove that no
   * job was made (the controller may have accepted it): give jobs unique names and look for them.
   */
  async submit(req: SubmitRequest): Promise<string> {
    const { args, env } = buildSbatch(req);
    const out = await this.run('sbatch', args, { stdin: req.script, env, clean: true });
    // --parsable prints "id" or "id;cluster" (warnings, if any, go to stderr).
    const id = out.trim().split('\n').pop()?.split(';')[0]?.trim() ?? '';
    if (!JOB_ID.test(id)) {
      throw new SlurmError(`sbatch: unexpected output ${JSON.stringify(out)}`, 'sbatch', 0, '');
    }
    return id;
  }

  /**
   * The jobs squeue knows (pending, running, and ended ones for MinJobAge seconds), in one call.
   * An id squeue no longer knows is simply absent.
   */
  async jobs(filter: JobFilter = {}): Promise<SlurmJob[]> {
    const { ids, namePrefix } = filter;
    ids?.forEach(checkJobId);
    if (ids?.length === 0) return [];
    const args = ['--noheader', '--states=all', `--Format=${SQUEUE_FORMAT}`];
    const list = ids && [...new Set(ids)].join(',');
    // Linux caps one argument at 128 KiB; a longer list is filtered here instead.
    if (list !== undefined && list.length <= MAX_JOBS_ARG) args.push(`--jobs=${list}`);
    let out: string;
    try {
      out = await this.run('squeue', args);
    } catch (e) {
      // Given one id, squeue asks for that job alone and fails when it is unknown; given several,
      // it prints the known ones and exits 0.
      if (ids && e instanceof SlurmError && UNKNOWN_JOB.test(e.stderr)) return [];
      throw e;
    }
    const wanted = ids && new Set(ids);
    return parseSqueue(out).filter(
      (j) => (!wanted || wanted.has(j.id)) && (namePrefix === undefined || j.name.startsWith(namePrefix)),
    );
  }

  /** Cancels (or signals) a job; a job that has ended or is unknown is not an error. */
  async cancel(id: string, opts: CancelOptions = {}): Promise<void> {
    checkJobId(id);
    const args: string[] = [];
    if (opts.signal !== undefined) args.push(`--signal=${checkSignal(opts.signal)}`);
    if (opts.full) args.push('--full');
    try {
      await this.run('scancel', [...args, id]);
    } catch (e) {
      if (e instanceof SlurmError && (UNKNOWN_JOB.test(e.stderr) || ALREADY_DONE.test(e.stderr))) return;
      throw e;
    }
  }

  /** Cancels the jobs named `name`; their ids. */
  async cancelNamed(name: string): Promise<string[]> {
    const ids = (await this.jobs({ namePrefix: name })).filter((j) => j.name === name).map((j) => j.id);
    await Promise.all(ids.map((id) => this.cancel(id)));
    return ids;
  }

  /** Why Slurm cannot be used (no commands, no controller answering), or null when it can. */
  async unavailableReason(): Promise<string | null> {
    try {
      await this.run('sinfo', ['--noheader', '--format=%P']);
      return null;
    } catch (e) {
      return e instanceof Error ? e.message : String(e);
    }
  }

  /** Whether sinfo gets an answer from the controller. */
  async available(): Promise<boolean> {
    return (await this.unavailableReason()) === null;
  }

  /** Runs one command; resolves with its stdout. */
  private async run(
    command: string,
    args: string[],
    extra: { stdin?: string; env?: Record<string, string>; clean?: boolean } = {},
  ): Promise<string> {
    const env = {
      // clean: the command gets only what is given, and the server's own settings for Slurm's
      // commands (SLURM_CONF, SBATCH_*, …): sbatch passes all of its environment on to the job.
      ...(extra.clean ? (this.settings ??= slurmSettings(process.env)) : process.env),
      ...this.opts.env,
      ...(this.opts.slurmConf !== undefined && { SLURM_CONF: this.opts.slurmConf }),
      ...extra.env,
    };
    const timeout = this.timeoutMs;
    const { runner } = this.opts;
    if (runner) {
      const r = await runner.run({
        command,
        args,
        env,
        stdin: extra.stdin ?? '',
        timeoutMs: timeout,
        maxBuffer: MAX_OUTPUT,
      });
      if (r.error)
        throw commandError(
          command,
          args,
          Object.assign(new Error(r.error.message), r.error),
          r.stderr,
          timeout,
        );
      return r.stdout;
    }
    return new Promise((resolve, reject) => {
      const child = execFile(
        command,
        args,
        { env, timeout, killSignal: 'SIGKILL', maxBuffer: MAX_OUTPUT, encoding: 'utf8' },
        (error, stdout, stderr) => {
          if (error) reject(commandError(command, args, error, stderr, timeout));
          else resolve(stdout);
        },
      );
      // A command that exits without reading stdin makes this EPIPE; its exit status says why.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(extra.stdin ?? '');
    });
  }
}

/**
 * sbatch's arguments and its whole environment for a request (the script goes on stdin): the
 * job's variables and those it inherits of `from`, the submitter's environment, and nothing else.
 */
export function buildSbatch(
  req: SubmitRequest,
  from: NodeJS.ProcessEnv = process.env,
): { args: string[]; env: Record<string, string> } {
  if (req.name === '' || hasControlChar(req.name)) {
    throw new RangeError(`bad job name ${JSON.stringify(req.name)}: empty or with control characters`);
  }
  // --opt=value throughout: a value starting with '-' is then never taken for an option.
  const args = ['--parsable', `--job-name=${req.name}`];
  if (req.partition !== undefined) args.push(`--partition=${req.partition}`);
  if (req.account !== undefined) args.push(`--account=${req.account}`);
  if (req.qos !== undefined) args.push(`--qos=${req.qos}`);
  if (req.timeLimitSeconds !== undefined) args.push(`--time=${timeLimitMinutes(req.timeLimitSeconds)}`);
  if (req.cpusPerTask !== undefined)
    args.push(`--cpus-per-task=${positiveInt('cpusPerTask', req.cpusPerTask)}`);
  const nodes = positiveInt('nodes', req.nodes ?? 1);
  args.push(`--nodes=${nodes}`);
  // Several nodes: one task on each (a gang's member), started by srun in the script.
  if (nodes > 1) args.push(`--ntasks-per-node=1`);
  if (req.workdir !== undefined) args.push(`--chdir=${req.workdir}`);
  if (req.runAs) args.push(`--uid=${req.runAs.uid}`, `--gid=${req.runAs.gid}`);
  if (req.gres) args.push(`--gres=${req.gres}`);
  args.push(`--output=${req.output ?? '/dev/null'}`);
  const jobEnv = checkEnv(req.env ?? {});
  // --export=ALL of an environment made for the job, never a list of names: with a list (or
  // NONE) slurmd loads the user's login environment first (`su - user`), which costs every job
  // about half a second. Explicit: an SBATCH_EXPORT in berth's environment must not change it.
  const inherited: Record<string, string> = {};
  const names = req.inherit === true ? Object.keys(from) : checkNames(req.inherit ?? []);
  for (const name of names)
    if (from[name] !== undefined && !RESERVED_ENV.test(name)) inherited[name] = from[name];
  args.push('--export=ALL');
  args.push(...(req.extraArgs ?? []));
  return { args, env: { ...inherited, ...jobEnv } };
}

/** Slurm counts time limits in whole minutes: round up, so a job never gets less than asked. */
export function timeLimitMinutes(seconds: number): number {
  if (!Number.isFinite(seconds) || seconds < 0) throw new RangeError(`bad time limit ${seconds} s`);
  return Math.max(1, Math.ceil(seconds / 60));
}

/** The variables of `env` that Slurm's commands read as their settings (SLURM_*, SBATCH_*). */
function slurmSettings(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env))
    if (RESERVED_ENV.test(name) && value !== undefined) out[name] = value;
  return out;
}

const hasControlChar = (s: string): boolean =>
  [...s].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

function positiveInt(what: string, n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be a whole number ≥ 1, not ${n}`);
  return n;
}

function checkNames(names: string[]): string[] {
  for (const name of names)
    if (!ENV_NAME.test(name)) throw new RangeError(`bad environment variable name ${JSON.stringify(name)}`);
  return names;
}

function checkEnv(env: Record<string, string>): Record<string, string> {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) throw new RangeError(`bad environment variable name ${JSON.stringify(name)}`);
    if (RESERVED_ENV.test(name)) {
      throw new RangeError(`environment variable ${name}: SLURM_* and SBATCH_* are sbatch's own`);
    }
    if (value.includes('\0')) throw new RangeError(`environment variable ${name}: a NUL cannot be passed`);
  }
  return env;
}

function checkSignal(signal: string): string {
  if (!/^[A-Za-z0-9]+$/.test(signal)) throw new RangeError(`bad signal ${JSON.stringify(signal)}`);
  return signal;
}

function checkJobId(id: string): void {
  if (!JOB_ID.test(id)) throw new RangeError(`bad Slurm job id ${JSON.stringify(id)}`);
}

function commandError(
  command: string,
  args: string[],
  error: Pick<ExecFileException, 'code' | 'killed' | 'message'>,
  stderr: string,
  timeoutMs: number,
): SlurmError {
  const line = [command, ...args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a)))].join(' ');
  const err = oneLine(stderr, command);
  const exit = typeof error.code === 'number' ? error.code : null;
  let why: string;
  if (error.code === 'ENOENT') why = `${command} not found (are Slurm's client commands installed?)`;
  else if (error.killed && exit === null) why = `no answer within ${timeoutMs} ms${err && `: ${err}`}`;
  else if (exit !== null) why = `${err || 'failed'} (exit ${exit})`;
  else why = err || oneLine(error.message);
  return new SlurmError(`${line}: ${why}`, line, exit, stderr);
}

/** stderr on one line, without the "sbatch: error: " before each line (the message names the command). */
const oneLine = (text: string, command?: string): string =>
  text
    .split('\n')
    .map((l) => (command !== undefined && l.startsWith(`${command}: `) ? l.slice(command.length + 2) : l))
    .map((l) => l.replace(/^error: /, '').trim())
    .filter((l) => l !== '')
    .join('; ');
