/** The job commands: `berth submit`, `jobs`, `status`, `logs` and `cancel`. */
import { Option, type Command } from 'commander';
import type { JobState } from '../../domain/job.js';
import type { Job, JobEvent } from '../api-types.js';
import { ApiError, apiPath, type ApiClient } from '../client.js';
import { EXIT_FAILURE, oneLine, UsageError } from '../errors.js';
import {
  backoffSeconds,
  each,
  envEntry,
  jobId,
  jobIds,
  jobRef,
  jobRefs,
  jobStates,
  type JobRef,
  positiveInteger,
  priority,
  quantityList,
  repeatable,
  retryCount,
  timeoutSeconds,
} from '../flags.js';
import { arrayCounts, describeJob, jobTable } from '../job-format.js';
import {
  copyLog,
  exitCodeOf,
  jobPath,
  resolveJob,
  stateLine,
  waitForArray,
  waitForJob,
  watching,
  type ArrayStatus,
} from '../job-watch.js';
import { json, outputWidth, printable } from '../output.js';
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
  artifact?: string[];
  image?: string;
  array?: string;
  retries?: number;
  infraRetries?: number;
  retryBackoff?: number;
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
  array?: number;
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
  // In an image, no command runs the image's own (its Entrypoint and Cmd), as docker run does.
  if (f.script === undefined && command.length === 0 && f.image === undefined) {
    throw new UsageError(
      "nothing to run: give a command (berth submit -- CMD [ARG...]), --script 'CODE', or --image REF to run the image's own",
    );
  }
  const given = {
    name: f.name,
    ...(f.script !== undefined ? { script: f.script } : command.length > 0 ? { command } : {}),
    image: f.image,
    target: f.target,
    requests: f.request,
    resources: f.resource,
    priority: f.priority,
    env: f.env,
    timeoutSeconds: f.timeout,
    workers: f.workers,
    array: f.array,
    artifacts: f.artifact,
    retries: f.retries,
    infraRetries: f.infraRetries,
    retryBackoffSeconds: f.retryBackoff,
    dependsOn: f.after,
    dependsOnAny: f.afterAny,
    dependsOnFailed: f.afterFailed,
    idempotencyKey: f.idempotencyKey,
  };
  return Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
}

/** `submitted job 12 (queued: waiting in cluster queue default)`. */
const submittedLine = (job: Job): string =>
  `submitted job ${job.id} (${job.state}: ${printable(job.reason)})`;

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
    .option(
      '--timeout <duration>',
      "stop it after this long: 90 (seconds), 90s, 10m, 1h30m (default: the target's defaultTimeout, if any)",
      timeoutSeconds,
    )
    .option(
      '--workers <n>',
      'a gang job: n workers at once, all or nothing; each runs the command with BERTH_RANK, BERTH_WORLD_SIZE and BERTH_HOSTS (--request is per worker)',
      positiveInteger,
    )
    .option(
      '--retries <n>',
      'run it again up to n times after its own failures (a non-zero exit, its timeout); default 0',
      retryCount,
    )
    .option(
      '--infra-retries <n>',
      "run it again up to n times after the infrastructure's failures (its worker lost, its node failed); default 0. Preemption is never charged",
      retryCount,
    )
    .option(
      '--retry-backoff <duration>',
      "the first retry's delay, doubled for each later one, with jitter: 0, 30s, 2m (default 10s)",
      backoffSeconds,
    )
    .option(
      '--array <indices>',
      "a job array, as Slurm's: one task per index (BERTH_ARRAY_ID, BERTH_ARRAY_INDEX): 0-999, 1,3,5, 0-15:4; %K runs at most K at once (0-999%50)",
    )
    .option('--after <job>', 'run only after this job has succeeded (repeatable)', jobIds)
    .option('--after-any <job>', 'run only after this job has ended, however it ended (repeatable)', jobIds)
    .option(
      '--after-failed <job>',
      'run only after this job has failed or been cancelled (repeatable); cancelled if it succeeds',
      jobIds,
    )
    .option(
      '--artifact <glob>',
      "keep the files this glob matches in the job's working directory when it has run, e.g. 'results/*.csv' (repeatable; see berth artifacts)",
      each,
    )
    .option(
      '--image <ref>',
      "run it in this OCI image (registry/name:tag, or @sha256:…), pinned to its digest when admitted: the image's Entrypoint runs the command, or its Cmd without one (default: the target's image, if any)",
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
    s.show(job, () => submittedLine(job));
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
    );
  examples(cmd, [
    'berth logs 12',
    'berth logs -f 12',
    'berth logs 123_7',
    'berth logs --attempt 1 12',
  ]).action(async (ref: JobRef, f: { follow?: boolean; attempt?: number }) => {
    const s = openSession({});
    const id = await resolveJob(s.client, ref);
    const copy = () => copyLog(s.client, id, f.follow === true, process.stdout, f.attempt);
    await (f.follow ? watching(id, copy) : copy());
  });
}

function registerCancel(program: Command): void {
  const cmd = clientCommand(
    program,
    'cancel',
    "cancel jobs: queued ones at once, running ones are stopped; an array's id cancels all its tasks, as scancel does",
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
        const job = typeof ref === 'number' ? await s.client.get<Job>(jobPath(id)) : undefined;
        if (job && job.arrayId === job.id) {
          const a = await s.client.post<ArrayStatus>(apiPath`/arrays/${id}/cancel`);
          cancelled.push(a.job);
          lines.push(`cancelled array ${id}: ${arrayCounts(a)}`);
          continue;
        }
        const j = await s.client.post<Job>(`${jobPath(id)}/cancel`);
        cancelled.push(j);
        lines.push(`cancelled job ${j.id}${j.state === 'cancelled' ? '' : ' (stopping)'}`);
      } catch (err) {
        // Only the API's refusal is about this one job; anything else (unreachable server) stops here.
        if (!(err instanceof ApiError)) throw err;
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
