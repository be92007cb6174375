/** The job commands: `berth submit`, `jobs`, `status`, `logs` and `cancel`. */
import { Option, type Command } from 'commander';
import type { JobState } from '../../domain/job.js';
import type { Job, JobEvent } from '../api-types.js';
import { ApiError, apiPath, type ApiClient } from '../client.js';
import { CliError, EXIT_FAILURE, oneLine, UsageError } from '../errors.js';
import { jobId, jobRef, jobRefs, jobStates, type JobRef, positiveInteger } from '../flags.js';
import { arrayCounts, describeJob, jobTable } from '../job-format.js';
import {
  afterFirstLook,
  copyLog,
  exitCodeOf,
  inProject,
  jobPath,
  resolveJob,
  stateLine,
  waitForArray,
  waitForJob,
  watching,
  type ArrayStatus,
} from '../job-watch.js';
import { json, outputWidth, reasonText } from '../output.js';
import { jobSpecOptions, submitBody, type SubmitFlags } from '../submit-options.js';
import { clientCommand, examples, openSession, type CommonFlags, type Session } from '../session.js';

interface ListFlags extends CommonFlags {
  state?: JobState[];
  array?: number;
  all?: boolean;
  limit: number;
}

const DEFAULT_LIMIT = 50;
/** The most jobs the API returns in one page. */
const PAGE_SIZE = 1000;

/**
 * `submitted job 12 (queued: next to be admitted in queue default)`: what the scheduler decided
 * (`afterFirstLook`), or said to be provisional when it had not yet.
 */
const submittedLine = (job: Job): string =>
  `submitted job ${job.id} (${job.state}: ${reasonText(job.reason, Date.now())}` +
  `${job.provisional === true ? '; provisional: the scheduler has not weighed it yet' : ''})`;

/**
 * `--wait`/`--follow`: report the end of the job and exit with its code. Progress lines go to
 * stderr when stdout carries the job's log.
 */
async function watchSubmitted(s: Session, job: Job, follow: boolean): Promise<void> {
  const note = (line: string) => (follow ? process.stderr : process.stdout).write(`${line}\n`);
  const done = await watching(job.id, async () => {
    if (!s.json) note(submittedLine(await afterFirstLook(s.client, job)));
    if (follow) await copyLog(s.client, job.id, true, s.json ? process.stderr : process.stdout);
    return waitForJob(s.client, job.id);
  });
  if (s.json) process.stdout.write(`${json(done)}\n`);
  else note(stateLine(done));
  process.exitCode = exitCodeOf(done);
}

/** An array was submitted: says so; with `--wait`, waits for every task and exits 0 only if all succeeded. */
async function watchArray(s: Session, head: Job, wait: boolean): Promise<void> {
  const a = await s.client.get<ArrayStatus>(apiPath`/arrays/${head.id}`);
  const line = `submitted array ${a.id} [${a.spec}]: ${a.size.toLocaleString('en')} task${a.size === 1 ? '' : 's'}${a.throttle === null ? '' : `, at most ${a.throttle} at once`} (berth jobs --array ${a.id})`;
  if (!wait) return s.show(a, () => line);
  if (!s.json) process.stdout.write(`${line}\n`);
  const done = await watching(a.id, () => waitForArray(s.client, a.id));
  s.show(done, () => `array ${done.id} ${done.state}: ${arrayCounts(done)}`);
  process.exitCode = done.state === 'succeeded' ? 0 : EXIT_FAILURE;
}

/** The newest `max` jobs (all with undefined), paging with `before=`; `more` when some were left out. */
async function fetchJobs(
  client: ApiClient,
  project: string,
  states: JobState[] | undefined,
  max: number | undefined,
  /** Arrays as one line each (collapse), or one array's tasks. */
  arrays: { collapse?: true; array?: number } = {},
): Promise<{ jobs: Job[]; more: boolean }> {
  const jobs: Job[] = [];
  const path = apiPath`/projects/${project}/jobs`;
  for (;;) {
    // One more than wanted tells whether there are more.
    const limit = Math.min(PAGE_SIZE, max === undefined ? PAGE_SIZE : max - jobs.length + 1);
    const page = await client.get<Job[]>(path, {
      query: { state: states?.join(','), before: jobs.at(-1)?.id, limit, ...arrays },
    });
    jobs.push(...page);
    if (max !== undefined && jobs.length > max) return { jobs: jobs.slice(0, max), more: true };
    if (page.length < limit) return { jobs, more: false };
  }
}

function registerSubmit(program: Command): void {
  const cmd = jobSpecOptions(
    clientCommand(program, 'submit', 'submit a job to the current project', { project: true }).argument(
      '[command...]',
      'the command and its arguments; berth reads no options after it (or after --)',
    ),
  )
    .option(
      '--workers <n>',
      'a gang job: n workers at once, all or nothing; each runs the command with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS (--request is per worker)',
      positiveInteger,
    )
    .option(
      '--array <indices>',
      "a job array, as Slurm's: one task per index (BERTH_ARRAY_ID, BERTH_ARRAY_INDEX): 0-999, 1,3,5, 0-15:4; %K runs at most K at once (0-999%50)",
    )
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
    'berth submit --retries 3 --infra-retries 5 --retry-backoff 30s -- ./flaky-test.sh',
    'berth submit --array 0-999%50 -- ./task.sh   # $BERTH_ARRAY_INDEX says which',
    'berth submit -o json -- make test | jq .id',
    "berth submit --artifact 'results/*.csv' --artifact model.bin --wait -- ./train.sh",
    'berth submit --image registry.example.org/team/pytorch:2.3 --request nvidia.com/gpu=1 -- python train.py',
  ]).action(async (command: string[], f: SubmitFlags) => {
    const body = submitBody(command, f);
    if (f.array !== undefined && f.follow)
      throw new UsageError('--follow follows one job: with --array use --wait, then berth logs ID_INDEX');
    const s = openSession(f);
    const job = await s.client.post<Job>(apiPath`/projects/${s.project}/jobs`, body);
    if (job.arrayId !== null) return watchArray(s, job, f.wait === true);
    if (f.wait || f.follow) return watchSubmitted(s, job, f.follow === true);
    // -o json answers at once, as the API did (`provisional` says whether the scheduler had looked).
    if (s.json) return s.show(job, () => '');
    const seen = await afterFirstLook(s.client, job);
    s.show(seen, () => submittedLine(seen));
  });
}

function registerList(program: Command): void {
  const cmd = clientCommand(program, 'jobs', 'list the jobs of the current project, newest first', {
    project: true,
  })
    .option(
      '--state <states>',
      "only jobs in these states: queued,admitted,running,… (an array's tasks each)",
      jobStates,
    )
    .option('--array <id>', 'the tasks of this job array (without it, an array is one line)', jobId)
    .addOption(new Option('--all', 'every job, not only the newest').conflicts('limit'))
    .addOption(
      new Option('--limit <n>', 'how many of the newest jobs to show')
        .argParser(positiveInteger)
        .default(DEFAULT_LIMIT),
    );
  examples(cmd, [
    'berth jobs',
    'berth jobs --state queued,running',
    'berth jobs --array 123 --state failed',
    'berth jobs --all -o json',
  ]).action(async (f: ListFlags) => {
    const s = openSession(f);
    // Without a filter each array is one line (its tasks counted by state), as squeue shows one.
    const arrays = f.array !== undefined ? { array: f.array } : f.state ? {} : { collapse: true as const };
    const { jobs, more } = await fetchJobs(s.client, s.project, f.state, f.all ? undefined : f.limit, arrays);
    const which = f.state ? `${f.state.join(' or ')} ` : '';
    s.show(jobs, () =>
      jobs.length === 0
        ? `no ${which}jobs in project ${s.project}`
        : jobTable(jobs, Date.now(), outputWidth()),
    );
    if (more && !s.json) {
      process.stderr.write(`(the newest ${jobs.length} ${which}jobs; --all or --limit N for more)\n`);
    }
  });
}

function registerStatus(program: Command): void {
  const cmd = clientCommand(
    program,
    'status',
    "a job's state, why it waits or how it ended, and its timeline",
    { project: true },
  );
  examples(cmd.argument('<job>', 'job id, or ARRAY_INDEX for a task of an array (123_7)', jobRef), [
    'berth status 12',
    'berth status 123_7',
    'berth status 12 -o json',
  ]).action(async (ref: JobRef, f: CommonFlags) => {
    const s = openSession(f);
    const id = await resolveJob(s.client, ref);
    const [job, timeline] = await Promise.all([
      s.client.get<Job>(jobPath(id)),
      s.client.get<JobEvent[]>(`${jobPath(id)}/events`),
    ]);
    inProject(job, f.project);
    s.show({ ...job, timeline }, () => describeJob(job, timeline, Date.now()));
  });
}

function registerLogs(program: Command): void {
  const cmd = program
    .command('logs')
    .description("print a job's output (stdout and stderr)")
    .argument('<job>', 'job id, or ARRAY_INDEX for a task of an array (123_7)', jobRef)
    .addOption(
      new Option('-f, --follow', 'keep printing output as it is written, until the job ends').conflicts(
        'attempt',
      ),
    )
    .option(
      '--attempt <k>',
      'only the output of attempt k (1 is the first) of a job that ran again (retried or requeued); berth status lists them',
      positiveInteger,
    )
    .option('--project <name>', 'the project the job should be in: refused, saying where it is, if not');
  examples(cmd, [
    'berth logs 12',
    'berth logs -f 12',
    'berth logs 123_7',
    'berth logs --attempt 1 12',
  ]).action(async (ref: JobRef, f: { follow?: boolean; attempt?: number; project?: string }) => {
    const s = openSession({});
    const id = await resolveJob(s.client, ref);
    if (f.project !== undefined) inProject(await s.client.get<Job>(jobPath(id)), f.project);
    const copy = () => copyLog(s.client, id, f.follow === true, process.stdout, f.attempt);
    await (f.follow ? watching(id, copy) : copy());
  });
}

function registerCancel(program: Command): void {
  const cmd = clientCommand(
    program,
    'cancel',
    "cancel jobs: queued ones at once, running ones are stopped; an array's id cancels all its tasks, as scancel does",
    { project: true },
  );
  examples(cmd.argument('<job...>', 'job ids; ARRAY_INDEX (123_7) for one task of an array', jobRefs), [
    'berth cancel 12',
    'berth cancel 12 13 14',
    'berth cancel 123     # every task of array 123',
    'berth cancel 123_7   # task 7 of array 123',
  ]).action(async (refs: JobRef[], f: CommonFlags) => {
    const s = openSession(f);
    const cancelled: Job[] = [];
    const lines: string[] = [];
    for (const ref of refs) {
      try {
        const id = await resolveJob(s.client, ref);
        const job =
          typeof ref === 'number' || f.project !== undefined
            ? await s.client.get<Job>(jobPath(id))
            : undefined;
        if (job) inProject(job, f.project);
        if (job && typeof ref === 'number' && job.arrayId === job.id) {
          const a = await s.client.post<ArrayStatus>(apiPath`/arrays/${id}/cancel`);
          cancelled.push(a.job);
          lines.push(`cancelled array ${id}: ${arrayCounts(a)}`);
          continue;
        }
        const j = await s.client.post<Job>(`${jobPath(id)}/cancel`);
        cancelled.push(j);
        lines.push(`cancelled job ${j.id}${j.state === 'cancelled' ? '' : ' (stopping)'}`);
      } catch (err) {
        // Only a refusal about this one job goes on to the next; anything else (unreachable server) stops here.
        if (!(err instanceof ApiError) && !(err instanceof CliError)) throw err;
        process.stderr.write(`berth: ${oneLine(err.message)}\n`);
        process.exitCode = EXIT_FAILURE;
      }
    }
    s.show(cancelled, () => lines.join('\n'));
  });
}

export function registerJobCommands(program: Command): void {
  registerSubmit(program);
  registerList(program);
  registerStatus(program);
  registerLogs(program);
  registerCancel(program);
}
