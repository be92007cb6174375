/** The job commands: `berth submit`, `jobs`, `status`, `logs` and `cancel`. */
import { Option, type Command } from 'commander';
import type { JobState } from '../../domain/job.js';
import type { Job, JobEvent } from '../api-types.js';
import { ApiError, apiPath, type ApiClient } from '../client.js';
import { EXIT_FAILURE, oneLine, UsageError } from '../errors.js';
import {
  envEntry,
  jobId,
  jobIds,
  jobStates,
  positiveInteger,
  priority,
  quantityList,
  repeatable,
  timeoutSeconds,
} from '../flags.js';
import { describeJob, jobTable } from '../job-format.js';
import { copyLog, exitCodeOf, jobPath, stateLine, waitForJob, watching } from '../job-watch.js';
import { json, outputWidth } from '../output.js';
import { clientCommand, examples, openSession, type CommonFlags, type Session } from '../session.js';

interface SubmitFlags extends CommonFlags {
  name?: string;
  target?: string;
  request?: Record<string, string>;
  resource?: string[];
  priority?: number | string;
  env?: Record<string, string>;
  timeout?: number;
  workers?: number;
  after?: number[];
  afterAny?: number[];
  afterFailed?: number[];
  idempotencyKey?: string;
  script?: string;
  wait?: boolean;
  follow?: boolean;
}

interface ListFlags extends CommonFlags {
  state?: JobState[];
  all?: boolean;
  limit: number;
}

const DEFAULT_LIMIT = 50;
/** The most jobs the API returns in one page. */
const PAGE_SIZE = 1000;

/** The submission body: what was given, nothing else. */
function submitBody(command: string[], f: SubmitFlags): Record<string, unknown> {
  if (f.script !== undefined && command.length > 0) {
    throw new UsageError('give either --script or a command after --, not both');
  }
  if (f.script === undefined && command.length === 0) {
    throw new UsageError("nothing to run: give a command (berth submit -- CMD [ARG...]) or --script 'CODE'");
  }
  const given = {
    name: f.name,
    ...(f.script !== undefined ? { script: f.script } : { command }),
    target: f.target,
    requests: f.request,
    resources: f.resource,
    priority: f.priority,
    env: f.env,
    timeoutSeconds: f.timeout,
    workers: f.workers,
    dependsOn: f.after,
    dependsOnAny: f.afterAny,
    dependsOnFailed: f.afterFailed,
    idempotencyKey: f.idempotencyKey,
  };
  return Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
}

/** `submitted job 12 (queued: waiting in cluster queue default)`. */
const submittedLine = (job: Job): string => `submitted job ${job.id} (${job.state}: ${job.reason})`;

/**
 * `--wait`/`--follow`: report the end of the job and exit with its code. Progress lines go to
 * stderr when stdout carries the job's log.
 */
async function watchSubmitted(s: Session, job: Job, follow: boolean): Promise<void> {
  const note = (line: string) => (follow ? process.stderr : process.stdout).write(`${line}\n`);
  const done = await watching(job.id, async () => {
    if (!s.json) note(submittedLine(job));
    if (follow) await copyLog(s.client, job.id, true, s.json ? process.stderr : process.stdout);
    return waitForJob(s.client, job.id);
  });
  if (s.json) process.stdout.write(`${json(done)}\n`);
  else note(stateLine(done));
  process.exitCode = exitCodeOf(done);
}

/** The newest `max` jobs (all with undefined), paging with `before=`; `more` when some were left out. */
async function fetchJobs(
  client: ApiClient,
  project: string,
  states: JobState[] | undefined,
  max: number | undefined,
): Promise<{ jobs: Job[]; more: boolean }> {
  const jobs: Job[] = [];
  const path = apiPath`/projects/${project}/jobs`;
  for (;;) {
    // One more than wanted tells whether there are more.
    const limit = Math.min(PAGE_SIZE, max === undefined ? PAGE_SIZE : max - jobs.length + 1);
    const page = await client.get<Job[]>(path, {
      query: { state: states?.join(','), before: jobs.at(-1)?.id, limit },
    });
    jobs.push(...page);
    if (max !== undefined && jobs.length > max) return { jobs: jobs.slice(0, max), more: true };
    if (page.length < limit) return { jobs, more: false };
  }
}

function registerSubmit(program: Command): void {
  const cmd = clientCommand(program, 'submit', 'submit a job to the current project', { project: true })
    .argument('[command...]', 'the command and its arguments; berth reads no options after it (or after --)')
    .option('--name <name>', 'a name for the job (default: the command)')
    .option('--target <target>', 'where to run it (default: the server default target)')
    .option('--request <quantities>', 'resources to reserve: cpu=2,memory=4Gi (repeatable)', quantityList)
    .option('--resource <type>', 'a managed resource to give the job (repeat for more)', repeatable)
    .option(
      '--priority <n|class>',
      'a number (higher is admitted first; default 0) or a priority class (berth priority list)',
      priority,
    )
    .option('--env <name=value>', 'an environment variable; NAME alone passes ours on (repeatable)', envEntry)
    .option('--timeout <duration>', 'stop it after this long: 90 (seconds), 90s, 10m, 1h30m', timeoutSeconds)
    .option(
      '--workers <n>',
      'a gang job: n workers at once, all or nothing; each runs the command with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS (--request is per worker)',
      positiveInteger,
    )
    .option('--after <job>', 'run only after this job has succeeded (repeatable)', jobIds)
    .option('--after-any <job>', 'run only after this job has ended, however it ended (repeatable)', jobIds)
    .option(
      '--after-failed <job>',
      'run only after this job has failed or been cancelled (repeatable); cancelled if it succeeds',
      jobIds,
    )
    .option('--idempotency-key <key>', 'submitting again with the same key returns the same job')
    .option('--script <code>', 'run this shell code with /bin/sh -c instead of a command')
    .addOption(
      new Option('--wait', 'wait until it finishes; exit with its exit code (1 if it has none)').conflicts(
        'follow',
      ),
    )
    .addOption(
      new Option(
        '--follow',
        'print its output as it runs (to stderr with -o json); exit as --wait',
      ).conflicts('wait'),
    )
    .passThroughOptions();
  examples(cmd, [
    "berth submit -- sh -c 'echo hello; exit 3'",
    'berth submit --request cpu=2,memory=4Gi --timeout 1h30m --wait -- python train.py --epochs 10',
    "berth submit --follow --env GREETING=hi --script 'echo $GREETING'",
    'berth submit --after 12 --after 13 -- ./report.sh',
    'berth submit --priority high -- ./urgent.sh',
    'berth submit -o json -- make test | jq .id',
  ]).action(async (command: string[], f: SubmitFlags) => {
    const body = submitBody(command, f);
    const s = openSession(f);
    const job = await s.client.post<Job>(apiPath`/projects/${s.project}/jobs`, body);
    if (f.wait || f.follow) return watchSubmitted(s, job, f.follow === true);
    s.show(job, () => submittedLine(job));
  });
}

function registerList(program: Command): void {
  const cmd = clientCommand(program, 'jobs', 'list the jobs of the current project, newest first', {
    project: true,
  })
    .option('--state <states>', 'only jobs in these states: queued,admitted,running,…', jobStates)
    .addOption(new Option('--all', 'every job, not only the newest').conflicts('limit'))
    .addOption(
      new Option('--limit <n>', 'how many of the newest jobs to show')
        .argParser(positiveInteger)
        .default(DEFAULT_LIMIT),
    );
  examples(cmd, ['berth jobs', 'berth jobs --state queued,running', 'berth jobs --all -o json']).action(
    async (f: ListFlags) => {
      const s = openSession(f);
      const { jobs, more } = await fetchJobs(s.client, s.project, f.state, f.all ? undefined : f.limit);
      const which = f.state ? `${f.state.join(' or ')} ` : '';
      s.show(jobs, () =>
        jobs.length === 0
          ? `no ${which}jobs in project ${s.project}`
          : jobTable(jobs, Date.now(), outputWidth()),
      );
      if (more && !s.json) {
        process.stderr.write(`(the newest ${jobs.length} ${which}jobs; --all or --limit N for more)\n`);
      }
    },
  );
}

function registerStatus(program: Command): void {
  const cmd = clientCommand(
    program,
    'status',
    "a job's state, why it waits or how it ended, and its timeline",
  );
  examples(cmd.argument('<job>', 'job id', jobId), ['berth status 12', 'berth status 12 -o json']).action(
    async (id: number, f: CommonFlags) => {
      const s = openSession(f);
      const [job, timeline] = await Promise.all([
        s.client.get<Job>(jobPath(id)),
        s.client.get<JobEvent[]>(`${jobPath(id)}/events`),
      ]);
      s.show({ ...job, timeline }, () => describeJob(job, timeline, Date.now()));
    },
  );
}

function registerLogs(program: Command): void {
  const cmd = program
    .command('logs')
    .description("print a job's output (stdout and stderr)")
    .argument('<job>', 'job id', jobId)
    .option('-f, --follow', 'keep printing output as it is written, until the job ends');
  examples(cmd, ['berth logs 12', 'berth logs -f 12']).action(async (id: number, f: { follow?: boolean }) => {
    const s = openSession({});
    const copy = () => copyLog(s.client, id, f.follow === true, process.stdout);
    await (f.follow ? watching(id, copy) : copy());
  });
}

function registerCancel(program: Command): void {
  const cmd = clientCommand(program, 'cancel', 'cancel jobs: queued ones at once, running ones are stopped');
  examples(cmd.argument('<job...>', 'job ids', jobIds), ['berth cancel 12', 'berth cancel 12 13 14']).action(
    async (ids: number[], f: CommonFlags) => {
      const s = openSession(f);
      const cancelled: Job[] = [];
      for (const id of ids) {
        try {
          cancelled.push(await s.client.post<Job>(`${jobPath(id)}/cancel`));
        } catch (err) {
          // Only the API's refusal is about this one job; anything else (unreachable server) stops here.
          if (!(err instanceof ApiError)) throw err;
          process.stderr.write(`berth: ${oneLine(err.message)}\n`);
          process.exitCode = EXIT_FAILURE;
        }
      }
      s.show(cancelled, () =>
        cancelled
          .map((j) => `cancelled job ${j.id}${j.state === 'cancelled' ? '' : ' (stopping)'}`)
          .join('\n'),
      );
    },
  );
}

export function registerJobCommands(program: Command): void {
  registerSubmit(program);
  registerList(program);
  registerStatus(program);
  registerLogs(program);
  registerCancel(program);
}
